package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// apiError is an error with its HTTP status, written as the JSON envelope of docs/api.md.
type apiError struct {
	Code    int             `json:"code"`
	Reason  string          `json:"reason"`
	Message string          `json:"message"`
	Details []v4.FieldError `json:"details,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// reasons maps statuses to the reason words of docs/api.md.
var reasons = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusMethodNotAllowed:      "MethodNotAllowed",
	http.StatusRequestTimeout:        "Timeout",
	http.StatusConflict:              "Conflict",
	http.StatusGone:                  "Gone",
	http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusUnprocessableEntity:   "Invalid",
	http.StatusLocked:                "Locked",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "Internal",
	http.StatusBadGateway:            "BadGateway",
	http.StatusServiceUnavailable:    "Unavailable",
	http.StatusInsufficientStorage:   "InsufficientStorage",
}

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Reason: reasons[code], Message: fmt.Sprintf(format, args...)}
}

// withDetail adds a field detail, for the 400s of mismatched kind, namespace or name.
func (e *apiError) withDetail(field, msg string) *apiError {
	e.Details = append(e.Details, v4.FieldError{Field: field, Message: msg})
	return e
}

// fromError turns any error into an apiError, mapping the store's sentinels to statuses.
func fromError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, store.ErrLocked):
		code = http.StatusLocked
	case errors.Is(err, store.ErrCompacted), errors.Is(err, store.ErrFellBehind):
		code = http.StatusGone
	case errors.Is(err, store.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	case errors.Is(err, store.ErrNoSpace):
		code = http.StatusInsufficientStorage
	case errors.Is(err, store.ErrQuotaExceeded):
		code = http.StatusForbidden // the namespace's limit, as Kubernetes' ResourceQuota
	}
	return &apiError{Code: code, Reason: reasons[code], Message: err.Error()}
}

// handlerFunc is a route's handler. An error it returns is answered by serve, with its
// status and the JSON error envelope; a stream that has already written its header
// answers a later failure in its own way and returns nil.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// serve adapts h to net/http: the one place where a route's error becomes its answer.
func (s *Server) serve(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// writeError writes err as the JSON error envelope.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := fromError(err)
	if ae.Code == http.StatusInsufficientStorage {
		// What the server does about it and what the operator must do (store/space.go).
		ae = &apiError{Code: ae.Code, Reason: ae.Reason, Message: ae.Message + ". " + s.store.SpaceAdvice(), Details: ae.Details}
	}
	if ae.Code >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", ae.Code, "err", err)
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return // the client went away; nobody reads the answer
	}
	writeJSON(w, ae.Code, struct {
		Error *apiError `json:"error"`
	}{ae})
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"code":500,"reason":"Internal","message":"cannot encode the response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
