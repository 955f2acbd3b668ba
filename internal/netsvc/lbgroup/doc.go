// Package lbgroup runs a node's share of a BCS load-balancer group: the services
// exported to the group (their BCSGROUP label) become an HAProxy configuration, HTTP
// ports routed by virtual host and path on one HTTP port and other ports forwarded on
// their service port. Changes of instances go through HAProxy's runtime API; other
// changes are checked with `haproxy -c` and reloaded with the listening sockets handed
// over, so no connection is refused or cut (docs/services.md, "Load-balancer groups").
package lbgroup
