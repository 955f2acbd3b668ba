package v1call

import (
	"context"
	"net/http"
)

type bodyKey struct{}

// WithBody keeps a front door's read body on the request, so that its routes can both
// inspect the body and forward it to /v1.
func WithBody(r *http.Request, body []byte) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
}

// Body is the body WithBody kept on r (nil when none).
func Body(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}
