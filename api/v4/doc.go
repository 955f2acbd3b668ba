// Package v4 holds berth's public object model: the BCS v4 specs (application, process,
// deployment, daemonset, service, configmap, secret), their decoding from JSON or YAML,
// defaults, validation with JSON field paths, and the ${...} variables of process specs.
//
// The package does no I/O and depends on nothing else of berth, so clients, the server
// and the agent can all share it.
package v4
