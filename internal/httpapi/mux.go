package httpapi

import "net/http"

// GuardFunc wraps a route's handler with the authentication and authorization its
// access names; it panics on an access it does not know (a programming error).
type GuardFunc func(pattern string, a Access, h HandlerFunc) HandlerFunc

// Mux is a ServeMux that remembers the routes registered on it and what each needs, so
// tests can walk every route (the server's admit_test.go checks that every write route
// validates, authz_test.go that every route has its access).
type Mux struct {
	// mux is not embedded: a route is added only through Handle, with its access.
	mux      *http.ServeMux
	patterns []string
	access   map[string]Access
	guard    GuardFunc
	errs     Errors
}

// NewMux returns a Mux whose routes pass guard and answer their errors with errs.
func NewMux(guard GuardFunc, errs Errors) *Mux {
	return &Mux{mux: http.NewServeMux(), access: map[string]Access{}, guard: guard, errs: errs}
}

// Handle registers h for pattern behind what a says the route needs: the guard of its
// access, then h, whose error the Mux's Errors answer.
func (m *Mux) Handle(pattern string, a Access, h HandlerFunc) {
	m.patterns = append(m.patterns, pattern)
	m.access[pattern] = a
	m.mux.HandleFunc(pattern, m.errs.Serve(m.guard(pattern, a, h)))
}

// HandleHTTP is Handle for a plain http.Handler (files, metrics, the other front doors).
func (m *Mux) HandleHTTP(pattern string, a Access, h http.Handler) {
	m.Handle(pattern, a, func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	})
}

func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }

// Pattern is the pattern of the route r would reach ("" when none).
func (m *Mux) Pattern(r *http.Request) string {
	_, pattern := m.mux.Handler(r)
	return pattern
}

// Patterns are the registered patterns, in the order of registration. Each is there once:
// http.ServeMux refuses (panics on) a pattern registered twice, at start-up.
func (m *Mux) Patterns() []string { return m.patterns }

// Access is the access pattern was registered with; false when it was not.
func (m *Mux) Access(pattern string) (Access, bool) {
	a, ok := m.access[pattern]
	return a, ok
}
