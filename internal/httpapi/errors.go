package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Error is an error with its HTTP status, written as the JSON envelope of docs/api.md
// (v4.Status on the wire).
type Error v4.Status

func (e *Error) Error() string { return e.Message }

// Errorf is an Error of status code with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Reason: v4.ReasonFor(code), Message: fmt.Sprintf(format, args...)}
}

// WithDetail adds a field detail, for the 400s of mismatched kind, namespace or name.
func (e *Error) WithDetail(field, msg string) *Error {
	e.Details = append(e.Details, v4.FieldError{Field: field, Message: msg})
	return e
}

// FromError turns any error into an Error, mapping the store's sentinels to statuses.
func FromError(err error) *Error {
	var ae *Error
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
	return &Error{Code: code, Reason: v4.ReasonFor(code), Message: err.Error()}
}

// HandlerFunc is a route's handler. An error it returns is answered by Errors.Serve, with
// its status and the JSON error envelope; a stream that has already written its header
// answers a later failure in its own way and returns nil.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Errors answers the errors of handlers: the one place where a route's error becomes
// its answer.
type Errors struct {
	// Log receives the failures of 5xx answers.
	Log *slog.Logger
	// SpaceAdvice says what the server does about a full store and what the operator
	// must do (store/space.go); it ends the message of a 507.
	SpaceAdvice func() string
}

// Serve adapts h to net/http.
func (e Errors) Serve(h HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			e.Write(w, r, err)
		}
	}
}

// Write writes err as the JSON error envelope.
func (e Errors) Write(w http.ResponseWriter, r *http.Request, err error) {
	ae := FromError(err)
	if ae.Code == http.StatusInsufficientStorage {
		ae = &Error{Code: ae.Code, Reason: ae.Reason, Message: ae.Message + ". " + e.SpaceAdvice(), Details: ae.Details}
	}
	if ae.Code >= 500 {
		e.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", ae.Code, "err", err)
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return // the client went away; nobody reads the answer
	}
	WriteJSON(w, ae.Code, v4.ErrorBody{Error: (*v4.Status)(ae)})
}

// WriteJSON writes v with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"code":500,"reason":"Internal","message":"cannot encode the response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
