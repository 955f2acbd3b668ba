package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// reviewBody is a review encoded once for every call that sends the same request: the
// validating hooks of one write all see the same object, so it is encoded once and
// only the uid, unique to each call, is written in per call.
type reviewBody struct{ head, tail []byte }

// uidMark is the request's uid, empty, as encoding/json writes it: Review's fields come
// in their declared order, and the request's uid is the first field after two constant
// ones, so the first occurrence is the uid's.
const uidMark = `"uid":""`

func encodeReview(req *Request) (reviewBody, error) {
	r := *req
	r.UID = ""
	data, err := json.Marshal(Review{APIVersion: ReviewAPIVersion, Kind: "AdmissionReview", Request: &r})
	if err != nil {
		return reviewBody{}, fmt.Errorf("encode the review: %w", err)
	}
	i := bytes.Index(data, []byte(uidMark))
	if i < 0 {
		return reviewBody{}, errors.New("encode the review: no request uid")
	}
	cut := i + len(uidMark) - 1 // between the uid's quotes
	return reviewBody{head: data[:cut], tail: data[cut:]}, nil
}

// with is the review with uid as its request's uid (a UUID: nothing to escape).
func (b reviewBody) with(uid string) []byte {
	out := make([]byte, 0, len(b.head)+len(uid)+len(b.tail))
	return append(append(append(out, b.head...), uid...), b.tail...)
}
