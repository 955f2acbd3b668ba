package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// A pod's csi volumes claim volume objects of its own namespace (docs/volumes.md,
// "Scheduling"): the agent stages and publishes the volume with the volume's secret for
// the pod, so claiming one is reading it. The spec library already refuses a name that
// could leave the namespace and a volume claimed twice by one pod; here the writer must
// be able to read each volume it claims (403, before anything stored is read), and a
// claim of a stored volume whose access mode only reads must be readOnly (422), which
// the scheduler and the server's claims would refuse at every start otherwise.

// admitVolumeReads refuses, with a 403 naming spec.template.spec.volumes[i].csi.volume,
// a pod that claims a volume its writer may not read.
func (s *Server) admitVolumeReads(r *http.Request, obj v4.Object) error {
	pod := v4.PodSpecOf(obj)
	if pod == nil {
		return nil
	}
	id := identityOf(r)
	req := acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindVolume), Namespace: obj.GetMeta().Namespace}
	for i, v := range pod.Volumes {
		if v.CSI == nil || id.Allowed(req) {
			continue
		}
		field := fmt.Sprintf("spec.template.spec.volumes[%d].csi.volume", i)
		return httpapi.Errorf(http.StatusForbidden, "%s: %s may not claim a volume it may not read: it may not %s", field, id, req).
			WithDetail(field, "needs "+req.String())
	}
	return nil
}

// readerOnly reports whether a volume's access mode only reads.
func readerOnly(mode string) bool {
	return mode == v4.AccessSingleNodeReader || mode == v4.AccessMultiNodeReader
}

// checkVolumeClaims refuses (422, naming each csi.readOnly) a write claim of a volume,
// stored or written in the same stream, whose access mode only reads. A volume that
// does not exist yet is no error: the task groups wait for it at placement.
func (s *Server) checkVolumeClaims(ctx context.Context, obj v4.Object, stream []v4.Document) error {
	pod := v4.PodSpecOf(obj)
	if pod == nil {
		return nil
	}
	ns := obj.GetMeta().Namespace
	var problems v4.FieldErrors
	for i, v := range pod.Volumes {
		if v.CSI == nil || v.CSI.ReadOnly {
			continue
		}
		vol, err := s.volumeOf(ctx, stream, ns, v.CSI.Volume)
		if err != nil {
			return err
		}
		if vol != nil && readerOnly(vol.Spec.AccessMode) {
			problems = append(problems, v4.FieldError{Field: fmt.Sprintf("spec.template.spec.volumes[%d].csi.readOnly", i),
				Message: fmt.Sprintf("volume %s/%s is %s: the claim must be readOnly", ns, v.CSI.Volume, vol.Spec.AccessMode)})
		}
	}
	return httpapi.InvalidObject(obj, problems)
}

// volumeOf is the volume ns/name written in stream, else stored, else nil.
func (s *Server) volumeOf(ctx context.Context, stream []v4.Document, ns, name string) (*v4.CSIVolume, error) {
	if o, ok := streamObject(stream, v4.KindVolume, ns, name).(*v4.CSIVolume); ok {
		return o, nil
	}
	o, err := s.store.Get(ctx, v4.KindVolume, ns, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read volume %s/%s: %w", ns, name, err)
	}
	vol, _ := o.(*v4.CSIVolume)
	return vol, nil
}

func admitVolumeClaims(ctx context.Context, a *admission, t target) error {
	if t.obj == nil {
		return nil
	}
	return a.s.checkVolumeClaims(ctx, t.obj, a.docs)
}
