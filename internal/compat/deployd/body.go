package deployd

import (
	"net/http"
	"strconv"
)

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
