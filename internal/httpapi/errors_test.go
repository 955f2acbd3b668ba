package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// The store's sentinels map to their statuses, wrapped or not; an Error keeps its own.
func TestFromError(t *testing.T) {
	cases := []struct {
		err  error
		code int
	}{
		{store.ErrNotFound, http.StatusNotFound},
		{fmt.Errorf("get: %w", store.ErrConflict), http.StatusConflict},
		{store.ErrAlreadyExists, http.StatusConflict},
		{store.ErrLocked, http.StatusLocked},
		{store.ErrCompacted, http.StatusGone},
		{store.ErrInvalid, http.StatusBadRequest},
		{context.DeadlineExceeded, http.StatusServiceUnavailable},
		{store.ErrNoSpace, http.StatusInsufficientStorage},
		{store.ErrQuotaExceeded, http.StatusForbidden},
		{errors.New("boom"), http.StatusInternalServerError},
		{fmt.Errorf("wrapped: %w", Errorf(http.StatusTeapot, "short and stout")), http.StatusTeapot},
	}
	for _, c := range cases {
		if got := FromError(c.err); got.Code != c.code || got.Message == "" {
			t.Errorf("%v: %+v, want %d", c.err, got, c.code)
		}
	}
}

// A handler's error is answered as the JSON envelope; a 507 says what to do about the
// full store.
func TestErrorsServe(t *testing.T) {
	errs := Errors{Log: storetest.QuietLogger(), SpaceAdvice: func() string { return "free some space" }}
	for _, c := range []struct {
		err  error
		want string
	}{
		{Errorf(http.StatusNotFound, "no such thing").WithDetail("name", "unknown"),
			`{"error":{"code":404,"reason":"NotFound","message":"no such thing","details":[{"field":"name","message":"unknown"}]}}` + "\n"},
		{store.ErrNoSpace, `"message":"` + store.ErrNoSpace.Error() + `. free some space"`},
	} {
		rec := httptest.NewRecorder()
		errs.Serve(func(http.ResponseWriter, *http.Request) error { return c.err })(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
		if body := rec.Body.String(); !strings.Contains(body, c.want) || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%v answered %d %s, want %s", c.err, rec.Code, body, c.want)
		}
	}
}
