package server

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// admitVolume refuses, with a 403 naming spec.secrets.name, a volume whose writer may not
// read the secret it names: the secret's items go to the volume's CSI plugin, and a plugin
// may be any workload its namespace runs, so naming a secret is reading it.
func (s *Server) admitVolume(r *http.Request, obj v4.Object) error {
	v, ok := obj.(*v4.CSIVolume)
	if !ok || v.Spec.Secrets == nil {
		return nil
	}
	id := identityOf(r)
	req := acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindSecret), Namespace: v.Metadata.Namespace}
	if id.Allowed(req) {
		return nil
	}
	const field = "spec.secrets.name"
	return httpapi.Errorf(http.StatusForbidden, "%s: %s may not hand a plugin a secret it may not read: it may not %s", field, id, req).
		WithDetail(field, "needs "+req.String())
}
