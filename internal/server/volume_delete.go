package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/volumes"
)

// deleteVolume is DELETE of a volume object (docs/volumes.md, The volume controller): a
// claimed volume is refused (409 naming the claims); a volume berth had its plugin
// create goes to phase Deleting, answered 202 (v4.Accepted: the volume and where to
// watch it), and the volume controller removes the object once the plugin deleted the
// volume, so the object never vanishes while the storage lives; any other (registered
// with spec.externalID, or never created) is removed at once. rv, when given, is the
// delete's precondition.
func (s *Server) deleteVolume(ctx context.Context, w http.ResponseWriter, ns, name, rv string) error {
	var deleting bool
	vol, err := volumes.Update(ctx, s.store, ns, name, func(v *v4.CSIVolume) (bool, error) {
		if rv != "" && v.Metadata.ResourceVersion != rv {
			return false, fmt.Errorf("volume %s/%s is at version %s, not %s: %w", ns, name, v.Metadata.ResourceVersion, rv, store.ErrConflict)
		}
		if len(v.Status.Claims) > 0 {
			return false, claimedError(v)
		}
		deleting = v.Spec.ExternalID == "" && (v.Status.ExternalID != "" || v.Status.Phase == v4.VolumeCreating || v.Status.Phase == v4.VolumeDeleting)
		if !deleting || v.Status.Phase == v4.VolumeDeleting {
			return false, nil
		}
		v.Status.Phase, v.Status.Message = v4.VolumeDeleting, "deleting through the plugin's controller"
		return true, nil
	})
	if err != nil {
		return err
	}
	if deleting {
		s.record(vol, "Deleting", "deleted")
		writeAccepted(w, vol, nil) // watch it to see it go
		return nil
	}
	// The version read is the precondition: a claim made since is not deleted with it.
	obj, err := s.store.Delete(ctx, v4.KindVolume, ns, name, vol.Metadata.ResourceVersion)
	if errors.Is(err, store.ErrConflict) && rv == "" {
		return httpapi.Errorf(http.StatusConflict, "volume %s/%s changed while being deleted: try again", ns, name)
	}
	if err != nil {
		return err
	}
	s.record(obj, "Deleted", "deleted")
	httpapi.WriteJSON(w, http.StatusOK, obj)
	return nil
}

// claimedError is the 409 of a delete of a claimed volume, naming its claims.
func claimedError(v *v4.CSIVolume) error {
	parts := make([]string, len(v.Status.Claims))
	for i, c := range v.Status.Claims {
		parts[i] = fmt.Sprintf("%s on node %s (%s)", c.TaskGroup, c.Node, c.Mode)
	}
	return httpapi.Errorf(http.StatusConflict, "volume %s/%s is claimed by task group %s: stop them first",
		v.Metadata.Namespace, v.Metadata.Name, strings.Join(parts, ", "))
}
