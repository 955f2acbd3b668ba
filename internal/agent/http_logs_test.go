package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The agent refuses log parameters it cannot honour, naming them, before it reads a log.
func TestLogsRefusesBadParameters(t *testing.T) {
	a := &Agent{}
	for _, q := range []string{"stream=both", "stream=STDERR", "timestamps=yes", "follow=sometimes", "tail=-1"} {
		w := httptest.NewRecorder()
		a.handleLogs(w, httptest.NewRequest(http.MethodGet, "/v1/taskgroups/ns/tg/logs?"+q, nil))
		name, _, _ := strings.Cut(q, "=")
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), name) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, w.Code, w.Body, name)
		}
	}
}
