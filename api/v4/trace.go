package v4

// TraceAnnotation carries the trace of the change that wrote an object: the W3C
// traceparent of the span that wrote it, then a space and the time it was written
// (RFC 3339). Berth sets it when tracing is on, so that the component acting on the
// change (the controller placing an application, the agent starting a task group)
// continues the same trace (docs/tracing.md). It is not part of the object's content:
// an apply that changes only it is "unchanged", and a value given by a user is replaced.
const TraceAnnotation = "berth.io/trace"
