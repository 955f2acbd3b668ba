package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Nodes are not documents users apply (v4.Parse refuses them): agents send their node as
// plain JSON. Decoding is strict like the spec decoder: unknown fields and wrong types are
// field errors (422), a body that is not JSON is a 400.

// readBody reads the whole body within the server's limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errorf(http.StatusRequestEntityTooLarge, "the body is over the limit of %d bytes", mbe.Limit)
		}
		return nil, errorf(http.StatusBadRequest, "read the body: %v", err)
	}
	return body, nil
}

// decodeNode decodes, defaults and validates a node. subject names it in messages.
func decodeNode(data []byte, subject string) (*v4.Node, error) {
	var n v4.Node
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&n)
	if err == nil && dec.More() {
		err = errors.New("data after the node object")
	}
	if err != nil {
		if fe := nodeFieldError(err); fe != nil {
			ae := errorf(http.StatusUnprocessableEntity, "%s is invalid: %s", subject, fe.Error())
			ae.Details = v4.FieldErrors{*fe}
			return nil, ae
		}
		return nil, errorf(http.StatusBadRequest, "the body is not a JSON node: %v", err)
	}
	if n.Kind != "" && !strings.EqualFold(string(n.Kind), string(v4.KindNode)) {
		return nil, errorf(http.StatusBadRequest, "the document is a %s, the path is for nodes", n.Kind).
			withDetail("kind", "must be node")
	}
	n.Kind = v4.KindNode
	v4.DefaultNode(&n)
	if fe := v4.ValidateNode(&n); len(fe) > 0 {
		ae := errorf(http.StatusUnprocessableEntity, "%s", invalidMessage(subject, fe))
		ae.Details = fe
		return nil, ae
	}
	return &n, nil
}

// nodeFieldError turns a decoding error about one field into a FieldError, or nil when
// the body is not JSON at all.
func nodeFieldError(err error) *v4.FieldError {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := te.Field
		if field == "" {
			field = "(document)"
		}
		return &v4.FieldError{Field: field, Message: fmt.Sprintf("must be a %s, got a JSON %s", te.Type, te.Value)}
	}
	// encoding/json reports unknown fields only in its message: `json: unknown field "x"`.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &v4.FieldError{Field: strings.Trim(rest, `"`), Message: "unknown field"}
	}
	return nil
}
