package server

import (
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// keysOnlyOf reads the keysOnly parameter of a list or watch: true asks for secrets with
// their keys but without the values (the web console's secrets page never holds one).
// It is for secrets only; on another kind it is a 400 naming the parameter.
func keysOnlyOf(r *http.Request, kind v4.Kind) (bool, error) {
	on, err := httpapi.BoolParam(r.URL.Query().Get("keysOnly"), "keysOnly")
	if err != nil || !on {
		return false, err
	}
	if kind != v4.KindSecret {
		return false, httpapi.Errorf(http.StatusBadRequest, "keysOnly is for secrets only, not %s", kind)
	}
	return true, nil
}

// withoutValues is a copy of a secret with each key's content emptied (its path kept);
// other objects come back as they are. The object given is not changed: it may be shared.
func withoutValues(o v4.Object) v4.Object {
	s, ok := o.(*v4.Secret)
	if !ok {
		return o
	}
	c := *s
	c.Datas = make(map[string]v4.SecretData, len(s.Datas))
	for k, d := range s.Datas {
		c.Datas[k] = v4.SecretData{Path: d.Path}
	}
	return &c
}
