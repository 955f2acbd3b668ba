// Package httpapi is the HTTP plumbing berth's user API (internal/server) and its agent
// protocol (internal/agentapi) share: the handler type and the one adapter that turns a
// handler's error into its status and the JSON error envelope of docs/api.md, request
// bodies read within their limits and decoded strictly, the access every route is
// registered with (Mux), node-certificate identification, NDJSON streams, and the reads
// of the shared caches both sides wait on.
package httpapi
