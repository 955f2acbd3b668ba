package server

import (
	"errors"
	"io"
	"net/http"
	"slices"

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
		if ae := bodyError(w, err); ae != nil {
			return nil, ae
		}
		return nil, errorf(http.StatusBadRequest, "read the body: %v", err)
	}
	return body, nil
}

// readNode reads the body and decodes it as a node (decodeNode); body is what was read,
// the node's definition.
func (s *Server) readNode(w http.ResponseWriter, r *http.Request, subject string) (n *v4.Node, body []byte, err error) {
	if body, err = s.readBody(w, r); err != nil {
		return nil, nil, err
	}
	if n, err = decodeNode(body, subject); err != nil {
		return nil, nil, err
	}
	return n, body, nil
}

// decodeNode decodes, defaults and validates a node. subject names it in messages. A
// body of the wrong kind is a 400 (the wrong path), other field problems are 422.
func decodeNode(data []byte, subject string) (*v4.Node, error) {
	n, err := v4.DecodeNode(data)
	if err == nil {
		return n, nil
	}
	fe, ok := errors.AsType[v4.FieldErrors](err)
	if !ok {
		return nil, errorf(http.StatusBadRequest, "the body is not a JSON node: %v", err)
	}
	status := http.StatusUnprocessableEntity
	if slices.ContainsFunc(fe, func(e v4.FieldError) bool { return e.Field == "kind" }) {
		status = http.StatusBadRequest
	}
	ae := errorf(status, "%s", invalidMessage(subject, fe))
	ae.Details = fe
	return nil, ae
}
