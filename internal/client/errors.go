package client

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/pki"
)

// APIError is an error answer of the server (docs/api.md, "Errors").
type APIError struct {
	Status  int
	Reason  string
	Message string
	Details []v4.FieldError
	// ResourceVersion, on the error that ended a watch stream, is the revision up to
	// which every change was sent: a watch from it loses nothing (when it is not
	// compacted). Empty otherwise.
	ResourceVersion string
}

// Error prints the message and then every detail on its own line, so a user sees all the
// problems of a document at once.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Message == "" {
		fmt.Fprintf(&b, "server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	for _, d := range e.Details {
		b.WriteString("\n  - ")
		b.WriteString(d.Error())
	}
	return b.String()
}

// maxErrorBody bounds how much of an error answer is read: error bodies are small, and a
// misbehaving proxy must not make the client buffer a huge page.
const maxErrorBody = 1 << 20

// decodeError builds an *APIError from a non-2xx answer. A body that is not the berth
// error JSON (a proxy's HTML page, plain text) still yields a useful message.
func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode, Reason: reasonFor(resp.StatusCode)}
	var body v4.ErrorBody
	if err := json.Unmarshal(data, &body); err == nil && body.Error != nil {
		if body.Error.Reason != "" {
			e.Reason = body.Error.Reason
		}
		e.Message = body.Error.Message
		e.Details = body.Error.Details
		return e
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	e.Message = fmt.Sprintf("server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if text != "" {
		e.Message += ": " + text
	}
	return e
}

// reasonFor gives the reason docs/api.md pairs with a status, for answers that omit it.
func reasonFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Gone"
	case http.StatusRequestEntityTooLarge:
		return "TooLarge"
	case http.StatusUnprocessableEntity:
		return "Invalid"
	case http.StatusServiceUnavailable:
		return "Unavailable"
	case http.StatusInternalServerError:
		return "Internal"
	}
	return http.StatusText(status)
}

// StatusOf returns the HTTP status of an *APIError in err's chain, or 0.
func StatusOf(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is a 409 answer.
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsInvalid reports whether err is a 422 answer (field errors in a document).
func IsInvalid(err error) bool { return StatusOf(err) == http.StatusUnprocessableEntity }

// UnreachableError says the server could not be reached at all, with a hint on what to do.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the berth server at %s: %v\n"+
		"is the server running? start one with `berth dev`; "+
		"the server address comes from --server, $BERTH_SERVER or the config file",
		e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// transportError wraps a failed round trip. Refused connections and unknown hosts become
// an *UnreachableError; context cancellation and deadlines stay recognisable with errors.Is.
func transportError(base *url.URL, method, path string, err error) error {
	var dnsErr *net.DNSError
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &UnreachableError{Server: base.String(), Err: syscall.ECONNREFUSED}
	}
	if errors.As(err, &dnsErr) {
		return &UnreachableError{Server: base.String(), Err: dnsErr}
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return &UntrustedError{Server: base.String(), Err: unwrapURLError(err)}
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return &UntrustedError{Server: base.String(), Err: unwrapURLError(err)}
	}
	if _, ok := errors.AsType[*pki.PinError](err); ok {
		return &UntrustedError{Server: base.String(), Err: unwrapURLError(err)}
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("%s %s%s: the server answered plain HTTP: use an http:// address only for a server's --insecure-listen: %w", method, base.String(), path, unwrapURLError(err))
	}
	return fmt.Errorf("%s %s%s: %w", method, base.String(), path, unwrapURLError(err))
}

// UntrustedError is a server whose certificate this client cannot verify.
type UntrustedError struct {
	Server string
	Err    error
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("cannot verify the berth server at %s: %v\n"+
		"give the cluster's CA certificate (a server keeps it in DATA-DIR/ca.crt) with --ca-cert, "+
		"$BERTH_CA_CERT or ca-cert: in the config file; for another name or address, start the servers with --tls-san",
		e.Server, e.Err)
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// unwrapURLError drops *url.Error's own prefix (it repeats method and URL).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// streamError returns the *APIError that an ERROR line of a watch stream carries (a 410
// when the client fell behind), or nil when line is an ordinary event. The server writes
// the type first, so every other line, however large, is told apart by its first bytes.
func streamError(line []byte) error {
	if !bytes.HasPrefix(line, []byte(`{"type":"ERROR"`)) {
		return nil
	}
	var l v4.WatchErrorLine
	if json.Unmarshal(line, &l) != nil || l.Type != EventError || l.Error == nil {
		return nil
	}
	return &APIError{Status: l.Error.Code, Reason: l.Error.Reason, Message: l.Error.Message, Details: l.Error.Details,
		ResourceVersion: l.ResourceVersion}
}

// ResumeVersion is where a watch that ended with err can start again without a list: the
// revision its ERROR line gave (a watcher that fell behind), or "" (list again).
func ResumeVersion(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.ResourceVersion
	}
	return ""
}
