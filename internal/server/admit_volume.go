package server

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
)

// admitVolume judges what a volume's writer may hand its plugin, reading nothing
// stored: a secret the writer may not read (403 naming spec.secrets.name: the secret's
// items go to the volume's CSI plugin, and a plugin may be any workload its namespace
// runs, so naming a secret is reading it), and a volume registered by its storage ID
// without the external-volume privilege (403 naming spec.externalID: the ID may be any
// storage the plugin reaches, another namespace's among it).
func (s *Server) admitVolume(r *http.Request, obj v4.Object) error {
	v, ok := obj.(*v4.CSIVolume)
	if !ok {
		return nil
	}
	id := identityOf(r)
	ns := v.Metadata.Namespace
	if v.Spec.ExternalID != "" {
		req := acl.Request{Verb: acl.VerbWrite, Kind: string(v4.KindVolume), Namespace: ns, Privilege: acl.PrivExternalVolume}
		if !id.Allowed(req) {
			const field = "spec.externalID"
			return httpapi.Errorf(http.StatusForbidden, "%s: %s may not register storage berth did not create: it may not %s", field, id, req).
				WithDetail(field, "needs the privilege "+acl.PrivExternalVolume)
		}
	}
	if v.Spec.Secrets == nil {
		return nil
	}
	req := acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindSecret), Namespace: ns}
	if id.Allowed(req) {
		return nil
	}
	const field = "spec.secrets.name"
	return httpapi.Errorf(http.StatusForbidden, "%s: %s may not hand a plugin a secret it may not read: it may not %s", field, id, req).
		WithDetail(field, "needs "+req.String())
}
