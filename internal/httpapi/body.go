package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// RequestTimeout bounds every non-streaming request, so an unreachable etcd gives 503
// instead of a request that hangs.
const RequestTimeout = 15 * time.Second

// RequestContext is the context of a non-streaming request: it ends after RequestTimeout.
func RequestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), RequestTimeout)
}

// Bodies reads request bodies within the server's limits.
type Bodies struct {
	// Max is the most bytes a body may have (413 past it).
	Max int64
	// Refused is the answer to a read the server's self-protection cut short (a body too
	// slow, too many bodies at once), nil for other errors.
	Refused func(w http.ResponseWriter, err error) *Error
}

// Read reads the whole body within the limit.
func (b Bodies) Read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, b.Max))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, Errorf(http.StatusRequestEntityTooLarge, "the body is over the limit of %d bytes", mbe.Limit)
		}
		if b.Refused != nil {
			if ae := b.Refused(w, err); ae != nil {
				return nil, ae
			}
		}
		return nil, Errorf(http.StatusBadRequest, "read the body: %v", err)
	}
	return body, nil
}

// Decode reads a JSON body strictly into v: 400 naming what is wrong.
func (b Bodies) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := b.Read(w, r)
	if err != nil {
		return err
	}
	if err := DecodeStrict(body, v); err != nil {
		return Errorf(http.StatusBadRequest, "the body is not valid: %v", err)
	}
	return nil
}

// DecodeStrict decodes one JSON value, refusing unknown fields, trailing data and keys
// given twice in one object (encoding/json would keep the last; docs/api.md).
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return v4.CheckDuplicateKeys(data)
}

// BoolParam reads a boolean query parameter; "" is false.
func BoolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, Errorf(http.StatusBadRequest, "query parameter %s=%q is not a boolean", name, v)
	}
	return b, nil
}
