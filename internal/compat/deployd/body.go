package deployd

import (
	"context"
	"net/http"
	"strconv"
)

type bodyKey struct{}

// withBody keeps the read body on the request.
func withBody(r *http.Request, body []byte) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
}

func bodyOf(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}

// boolQuery reads a boolean query parameter ("" is def).
func boolQuery(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errBadParam(name, v, "a boolean")
	}
	return b, nil
}

type paramError struct{ name, value, want string }

func (e paramError) Error() string {
	return "query parameter " + e.name + "=" + strconv.Quote(e.value) + " must be " + e.want
}

func errBadParam(name, value, want string) error { return paramError{name, value, want} }
