// Package netsvc is the node's side of services (docs/services.md): the agent's copy of
// every service and its endpoints (Catalog), and the node-local DNS server that answers
// for them and forwards every other name to the node's resolvers.
package netsvc
