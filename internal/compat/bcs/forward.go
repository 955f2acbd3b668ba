package bcs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// maxInnerAnswer bounds what one /v1 answer may hold before the front door gives up on
// it: a namespace's list of task groups at the largest sizes berth is built for.
const maxInnerAnswer = 256 << 20

// answer is a /v1 answer as the front door reads it.
type answer struct {
	status   int
	body     []byte
	warnings []string
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// recorder is the ResponseWriter a /v1 call writes into.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > maxInnerAnswer {
		r.over = true
		return 0, fmt.Errorf("answer over %d bytes", maxInnerAnswer)
	}
	return r.body.Write(p)
}

// call serves one /v1 request on behalf of the BCS request r: the same identity
// (Authorization header, TLS state) and context, another method, path and body.
func (h *Handler) call(r *http.Request, method, path string, query url.Values, body []byte) answer {
	inner := r.Clone(r.Context())
	inner.Method = method
	u, err := url.Parse(path)
	if err != nil {
		return answer{status: http.StatusBadRequest, body: errorBody("bad path: " + err.Error())}
	}
	u.RawQuery = query.Encode()
	inner.URL = u
	inner.RequestURI = inner.URL.RequestURI()
	inner.Body = io.NopCloser(bytes.NewReader(body))
	inner.ContentLength = int64(len(body))
	inner.Header = r.Header.Clone()
	if body != nil {
		inner.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	h.inner.ServeHTTP(rec, inner)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.over {
		return answer{status: http.StatusInternalServerError, body: errorBody("the answer is too large for the BCS API; use /v1 with paging")}
	}
	return answer{status: rec.status, body: rec.body.Bytes(), warnings: rec.header.Values("Warning")}
}

// v1Path builds an escaped /v1 path from segments (a "/" in one stays inside it).
func v1Path(segments ...string) string {
	p := "/v1"
	for _, s := range segments {
		p += "/" + url.PathEscape(s)
	}
	return p
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// errorBody is an error answer in /v1's shape, for what fails before /v1 answers.
func errorBody(msg string) []byte {
	return mustJSON(map[string]map[string]string{"error": {"message": msg}})
}
