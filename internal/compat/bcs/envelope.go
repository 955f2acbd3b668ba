package bcs

import (
	"encoding/json"
	"net/http"

	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS's error codes (bcs-common's error code table, the scheduler's and the mesos
// driver's ranges); 0 is success.
const (
	CodeSuccess         = 0
	CodeBadRequestData  = 1405008 // the request's data is invalid
	CodeJSONDecode      = 1405010 // the body is not the JSON of the kind
	CodeScheduler       = 1405200 // the scheduler refused or failed
	CodeAlreadyExists   = 1405201
	CodeNotFound        = 1405202
	CodeDriverParameter = 1405231 // a path or query parameter is wrong
	CodeUnknownMessage  = 1405233 // an executor message berth does not send
	CodeHeaderCheck     = 1405234 // the BCS-ClusterID header is missing or wrong
)

// envelope is every BCS answer. warnings is berth's: what berth ignored or read
// differently in the request (also sent as Warning headers).
type envelope struct {
	Result   bool     `json:"result"`
	Code     int      `json:"code"`
	Message  string   `json:"message"`
	Data     any      `json:"data"`
	Warnings []string `json:"warnings,omitempty"`
}

// failure is an answer that is not a success. BCS answered its errors with HTTP 200 and
// the code in the body, and its client (bcs-client) reads the body of a 200 only, so
// berth does the same; only what BCS's driver or gateway refused before the scheduler
// (the cluster header, an unknown route, a missing or refused credential) has its own
// status.
type failure struct {
	status  int // the HTTP status; 0 is 200
	code    int // BCS's code
	message string
}

func writeEnvelope(w http.ResponseWriter, status int, e envelope) {
	body, err := json.Marshal(e)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(envelope{Code: CodeScheduler, Message: "encode the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func writeFailure(w http.ResponseWriter, f failure) {
	status := f.status
	if status == 0 {
		status = http.StatusOK
	}
	writeEnvelope(w, status, envelope{Code: f.code, Message: f.message, Data: struct{}{}})
}

// writeSuccess answers data; the /v1 calls' warnings go along as headers and in the body.
func writeSuccess(w http.ResponseWriter, data any, warnings []string) {
	for _, v := range warnings {
		w.Header().Add("Warning", v)
	}
	writeEnvelope(w, http.StatusOK, envelope{Result: true, Code: CodeSuccess, Message: "success", Data: data, Warnings: v1call.WarningTexts(warnings)})
}

// failureOf turns a /v1 error answer into BCS's: the nearest BCS code, HTTP 200 but for
// 401 and 403, which a client must see whatever it reads. exists says that a 409 means
// "already exists" (a create).
func failureOf(a v1call.Answer, exists bool) failure {
	msg := a.Message()
	code := CodeScheduler
	switch a.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		code = CodeBadRequestData
	case http.StatusNotFound:
		code = CodeNotFound
	case http.StatusConflict:
		if exists {
			code = CodeAlreadyExists
		}
	}
	f := failure{code: code, message: msg}
	if a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
		f.status = a.Status
	}
	return f
}
