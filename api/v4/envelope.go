package v4

import "net/http"

// The envelopes of the REST API's answers (docs/api.md): what wraps objects and errors on
// the wire, written by the server and read by its clients from these same types.

// Status is the error of an error answer: its HTTP status, the reason word that goes with
// it, a message for people and, for an invalid object, every field at fault.
type Status struct {
	Code    int          `json:"code"`
	Reason  string       `json:"reason"`
	Message string       `json:"message"`
	Details []FieldError `json:"details,omitempty"`
	// UsedBy, on the 409 that refuses to delete a configmap or a secret that workloads
	// name, lists them (the first MaxUsedBy; the message names all), so that a program
	// reads them without parsing the message.
	UsedBy []ObjectRef `json:"usedBy,omitempty"`
}

// MaxUsedBy bounds Status.UsedBy: the answer of a namespace with many users stays small.
const MaxUsedBy = 100

// ObjectRef names one object.
type ObjectRef struct {
	Kind      Kind   `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ErrorBody is the envelope of an error answer, and of an error line that ends a stream
// of acknowledgements.
type ErrorBody struct {
	Error *Status `json:"error"`
}

// List is the answer of a list of objects: items of T (v4.Object as the server writes
// them, json.RawMessage as a client reads them before it knows their kind).
type List[T any] struct {
	Kind            string `json:"kind"`
	ResourceVersion string `json:"resourceVersion"`
	Items           []T    `json:"items"`
}

// EventList is one page of GET /v1/events: Continue, when set, asks for the next page, and
// every page of one list reads the same ResourceVersion.
type EventList struct {
	Kind            string  `json:"kind"`
	ResourceVersion string  `json:"resourceVersion"`
	Continue        string  `json:"continue,omitempty"`
	Items           []Event `json:"items"`
}

// WatchErrorType is the type of the line that ends a watch stream with an error.
const WatchErrorType = "ERROR"

// WatchLine is one line of a watch stream: an object and what happened to it.
type WatchLine[T any] struct {
	Type   string `json:"type"`
	Object T      `json:"object"`
}

// WatchErrorLine is the last line of a stream the server ends: a client that fell behind
// gets a 410 with the ResourceVersion to watch again from. Type comes first on the wire,
// so a client tells this line apart from an event by its first bytes.
type WatchErrorLine struct {
	Type            string  `json:"type"`
	Error           *Status `json:"error"`
	ResourceVersion string  `json:"resourceVersion,omitempty"`
}

// reasons are the reason words that go with the statuses berth answers.
var reasons = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusMethodNotAllowed:      "MethodNotAllowed",
	http.StatusRequestTimeout:        "Timeout",
	http.StatusConflict:              "Conflict",
	http.StatusGone:                  "Gone",
	http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusUnprocessableEntity:   "Invalid",
	http.StatusLocked:                "Locked",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "Internal",
	http.StatusBadGateway:            "BadGateway",
	http.StatusServiceUnavailable:    "Unavailable",
	http.StatusInsufficientStorage:   "InsufficientStorage",
}

// ReasonFor is the reason word of status code, "" for a status berth does not answer.
func ReasonFor(code int) string { return reasons[code] }

// Catalog is the answer of an agent's list of the catalog: every service and every
// endpoints object, each kind with the revision to watch it from.
type Catalog[T any] struct {
	Kind      string  `json:"kind"`
	Services  List[T] `json:"services"`
	Endpoints List[T] `json:"endpoints"`
}
