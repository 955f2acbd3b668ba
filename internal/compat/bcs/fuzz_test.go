package bcs

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// Any body sent to a BCS write route gets BCS's envelope, never a panic: the front door
// reads the document's head, the inner handler (here berth's parser, as /v1 admission
// runs it) the whole document with its warnings.
func FuzzBCSWrite(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v4","kind":"process","metadata":{"name":"web","namespace":"ns"},"updatePolicy":{},"spec":{"instance":1,"template":{"spec":{"processes":[{"procName":"a","startCmd":"b","healthChecks":[{"type":""},{"type":"TCP","intervalSeconds":5,"timeoutSeconds":5,"tcp":{"port":1}}]}]}}}}`,
		`{"metadata":{"name":""}}`, `{`, `[]`, `{"Metadata":{"Name":"x"},"Spec":{"Instance":-1}}`,
	} {
		f.Add([]byte(seed), "PUT", "/namespaces/ns/processes?instances=1&args=resource")
		f.Add([]byte(seed), "POST", "/namespaces/ns/deployments")
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		docs, err := v4.Parse(body.Bytes())
		if err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]map[string]string{"error": {"message": err.Error()}})
			return
		}
		for _, d := range docs {
			for _, warning := range d.Warnings {
				w.Header().Add("Warning", "299 berth \""+warning.String()+"\"")
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	door := New(inner, "", 1<<20)
	f.Fuzz(func(t *testing.T, body []byte, method, path string) {
		req, err := http.NewRequest(method, DriverPrefix+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set(ClusterHeader, "BCS-MESOS-1")
		rec := httptest.NewRecorder()
		door.ServeHTTP(rec, req)
		var e envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: not an envelope (%v): %s", method, path, err, rec.Body)
		}
		if e.Result != (e.Code == CodeSuccess) {
			t.Fatalf("result %v with code %d", e.Result, e.Code)
		}
	})
}
