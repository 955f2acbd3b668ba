// Package v1call lets berth's other front doors (BCS's API, deployd's API) serve their
// requests as calls to the /v1 handler: the same request identity (Authorization
// header, TLS state) and context, /v1's method, path and body, the answer recorded.
// Every call is then admitted, authorized and audited as /v1 calls are.
package v1call

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// maxAnswer bounds what one /v1 answer may hold before the call gives up on it: a
// namespace's list of task groups at the largest sizes berth is built for.
const maxAnswer = 256 << 20

// Answer is a /v1 answer.
type Answer struct {
	Status int
	Body   []byte
	// Warnings are the answer's Warning header values (`299 berth "text"`).
	Warnings []string
}

// OK says whether the call succeeded (2xx).
func (a Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// UsedBy is the users that a 409 refusing to delete an object in use lists (/v1's
// {"error": {"usedBy"}}); nil in any other answer.
func (a Answer) UsedBy() []v4.ObjectRef {
	var e struct {
		Error struct {
			UsedBy []v4.ObjectRef `json:"usedBy"`
		} `json:"error"`
	}
	if a.Status != http.StatusConflict || json.Unmarshal(a.Body, &e) != nil {
		return nil
	}
	return e.Error.UsedBy
}

// Message is the message of an error answer (/v1's {"error": {"message"}}), with the
// field details when there are several.
func (a Answer) Message() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Details []struct {
				Field   string `json:"field"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(a.Body))
	if json.Unmarshal(a.Body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
		if len(e.Error.Details) > 1 {
			var parts []string
			for _, d := range e.Error.Details {
				parts = append(parts, d.Field+": "+d.Message)
			}
			msg += ": " + strings.Join(parts, "; ")
		}
	}
	if msg == "" {
		msg = http.StatusText(a.Status)
	}
	return msg
}

// Caller calls Inner, the /v1 handler.
type Caller struct {
	Inner http.Handler
	// Big, when set, bounds how many lists longer than a page (listPage items) are read
	// at once through this Caller, each holding its items: a front door whose answers
	// need whole lists cannot take the server's memory with concurrent large lists
	// (docs/compat.md). Make it with NewGate.
	Big chan struct{}
}

// NewGate returns a Caller's Big gate letting n large lists be read at once.
func NewGate(n int) chan struct{} { return make(chan struct{}, max(n, 1)) }

// Call serves one /v1 request on behalf of r. path is escaped (Path builds it); body nil
// sends none.
func (c Caller) Call(r *http.Request, method, path string, query url.Values, body []byte) Answer {
	u, err := url.Parse(path)
	if err != nil {
		return Failed(http.StatusBadRequest, "bad path: "+err.Error())
	}
	u.RawQuery = query.Encode()
	inner := Request(r, method, u, body)
	if body != nil {
		inner.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	c.Inner.ServeHTTP(rec, inner)
	if rec.over {
		return Failed(http.StatusInternalServerError, "the answer is too large for this API; use /v1 with paging")
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return Answer{Status: rec.status, Body: rec.body.Bytes(), Warnings: rec.header.Values("Warning")}
}

// Request is the /v1 request method u with body, made on behalf of r: its context,
// credentials (headers, client certificate) and a copy of its headers the caller may change.
func Request(r *http.Request, method string, u *url.URL, body []byte) *http.Request {
	inner := r.Clone(r.Context())
	inner.Method, inner.URL, inner.RequestURI = method, u, u.RequestURI()
	inner.Body = io.NopCloser(bytes.NewReader(body))
	inner.ContentLength = int64(len(body))
	inner.Header = r.Header.Clone()
	return inner
}

// Failed is an error answer in /v1's shape, for what fails before /v1 answers.
func Failed(status int, msg string) Answer {
	body, _ := json.Marshal(map[string]map[string]string{"error": {"message": msg}})
	return Answer{Status: status, Body: body}
}

// Path builds an escaped /v1 path from segments (a "/" in one stays inside it).
func Path(segments ...string) string {
	p := "/v1"
	for _, s := range segments {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// Get reads one /v1 object into T; a failed call is returned as the Answer.
func Get[T any](c Caller, r *http.Request, path string) (*T, *Answer) {
	a := c.Call(r, http.MethodGet, path, nil, nil)
	if !a.OK() {
		return nil, &a
	}
	var v T
	if err := json.Unmarshal(a.Body, &v); err != nil {
		f := Failed(http.StatusInternalServerError, fmt.Sprintf("read %s: %v", path, err))
		return nil, &f
	}
	return &v, nil
}

// listPage is how many items List asks /v1 for at a time.
const listPage = 500

// List reads the items of a /v1 list into T, a page at a time: no /v1 answer holds more
// than a page. A list longer than a page waits for the Caller's Big gate.
func List[T any](c Caller, r *http.Request, path string) ([]T, *Answer) {
	return ListQuery[T](c, r, path, nil)
}

// ListQuery is List with more query parameters (such as keysOnly) sent on every page.
func ListQuery[T any](c Caller, r *http.Request, path string, extra url.Values) ([]T, *Answer) {
	var out []T
	cont := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(listPage)}}
		for k, v := range extra {
			q[k] = v
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		a := c.Call(r, http.MethodGet, path, q, nil)
		if !a.OK() {
			return nil, &a
		}
		var page struct {
			Items    []T    `json:"items"`
			Continue string `json:"continue"`
		}
		if err := json.Unmarshal(a.Body, &page); err != nil {
			f := Failed(http.StatusInternalServerError, fmt.Sprintf("read %s: %v", path, err))
			return nil, &f
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		if cont == "" && c.Big != nil {
			select {
			case c.Big <- struct{}{}:
				defer func() { <-c.Big }()
			case <-r.Context().Done():
				f := Failed(http.StatusServiceUnavailable, "the server is busy with other large lists; try again")
				return nil, &f
			}
		}
		cont = page.Continue
	}
}

// Warning is a Warning header value of a front door's own.
func Warning(text string) string { return "299 berth " + strconv.QuoteToASCII(text) }

// WarningTexts are the texts of Warning header values.
func WarningTexts(values []string) []string {
	var out []string
	for _, v := range values {
		if i := strings.IndexByte(v, '"'); i >= 0 {
			if t, err := strconv.Unquote(v[i:]); err == nil {
				out = append(out, t)
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

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
	if r.body.Len()+len(p) > maxAnswer {
		r.over = true
		return 0, fmt.Errorf("answer over %d bytes", maxAnswer)
	}
	return r.body.Write(p)
}
