package v4

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// DecodeNode decodes a node sent as one JSON object (agents register nodes this way, and
// node patches are decoded after merging), then defaults and validates it. Like Parse, it
// reports every problem at once as FieldErrors; input that is not one JSON object gives a
// plain error.
func DecodeNode(data []byte) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonSyntaxError(data, err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: data after the node object")
	}
	if err := CheckDuplicateKeys(data); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a node must be a JSON object, got %s", describe(v))
	}
	n := &Node{}
	var d decoder // a node is berth's own kind: BCS ignored keys are none of its
	decodeStruct("", m, reflect.ValueOf(n).Elem(), &d)
	errs := d.errs
	if n.Kind != "" && !strings.EqualFold(string(n.Kind), string(KindNode)) {
		errs.add("kind", "must be %q, got %q", KindNode, truncate(string(n.Kind), 40))
	}
	n.Kind = KindNode
	if n.APIVersion == "" {
		n.APIVersion = APIVersion
	}
	DefaultNode(n)
	decoded := map[string]bool{}
	for _, e := range errs {
		decoded[e.Field] = true
	}
	for _, e := range ValidateNode(n) {
		if !decoded[e.Field] {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return n, nil
}
