package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// What a volume's writer may change once the plugin has it (docs/volumes.md, "The
// object"): the fields the plugin created or validated it with are fixed, since the
// controller would otherwise delete it through another plugin, or forget storage it
// created (a spec.externalID added to a created volume is "registered": removed without
// the plugin's delete); mount options and the secret stay the writer's. And one storage
// volume is one object: a spec.externalID that another volume object of the same plugin
// already has (registered or created) is refused, so that no namespace gets another's
// storage by naming its ID.

// admitVolumeSpec runs checkVolumeSpec on volume objects.
func admitVolumeSpec(ctx context.Context, a *admission, t target) error {
	v, ok := t.obj.(*v4.CSIVolume)
	if !ok {
		return nil
	}
	return a.s.checkVolumeSpec(ctx, v)
}

func (s *Server) checkVolumeSpec(ctx context.Context, v *v4.CSIVolume) error {
	ns, name := v.Metadata.Namespace, v.Metadata.Name
	o, err := s.store.Get(ctx, v4.KindVolume, ns, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read volume %s/%s: %w", ns, name, err)
	default:
		if old, ok := o.(*v4.CSIVolume); ok && volumeMadeByPlugin(old) {
			if field := changedVolumeField(&old.Spec, &v.Spec); field != "" {
				return httpapi.InvalidObject(v, v4.FieldErrors{{Field: field, Message: fmt.Sprintf(
					"cannot change once the plugin has the volume (phase %s): delete the volume and create it again", old.Status.Phase)}})
			}
		}
	}
	if v.Spec.ExternalID == "" {
		return nil
	}
	all, _, err := s.store.List(ctx, v4.KindVolume, "")
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	for _, o := range all {
		other, ok := o.(*v4.CSIVolume)
		if !ok || other.Metadata.Namespace == ns && other.Metadata.Name == name || other.Spec.Plugin != v.Spec.Plugin {
			continue
		}
		if other.Spec.ExternalID == v.Spec.ExternalID || other.Status.ExternalID == v.Spec.ExternalID {
			holder := "another namespace's volume" // never named: the writer may not see it
			if other.Metadata.Namespace == ns {
				holder = "volume " + other.Metadata.Name
			}
			return httpapi.Errorf(http.StatusConflict, "spec.externalID: plugin %s's volume %q is already %s: one storage volume is one object",
				v.Spec.Plugin, v.Spec.ExternalID, holder).WithDetail("spec.externalID", "already another volume's")
		}
	}
	return nil
}

// volumeMadeByPlugin reports whether the controller has asked the plugin for v: it holds
// an idempotency UID (a create may be under way) or a storage ID.
func volumeMadeByPlugin(v *v4.CSIVolume) bool {
	return v.Status.UID != "" || v.Status.ExternalID != ""
}

// changedVolumeField is the first fixed field of a volume's spec that b changes from a,
// or "".
func changedVolumeField(a, b *v4.VolumeSpec) string {
	switch {
	case a.Plugin != b.Plugin:
		return "spec.plugin"
	case a.ExternalID != b.ExternalID:
		return "spec.externalID"
	case !reflect.DeepEqual(a.Capacity, b.Capacity):
		return "spec.capacity"
	case a.AccessMode != b.AccessMode:
		return "spec.accessMode"
	case a.AttachmentMode != b.AttachmentMode:
		return "spec.attachmentMode"
	case !reflect.DeepEqual(a.Topology, b.Topology):
		return "spec.topology"
	case !maps.Equal(a.Parameters, b.Parameters):
		return "spec.parameters"
	}
	return ""
}
