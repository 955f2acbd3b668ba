// Package cluster holds the wire types of berth's cluster routes (docs/ha.md,
// docs/operations.md): GET /v1/cluster with its etcd members and space, the answer of
// POST /v1/cluster/recover, a server's join (POST /v1/cluster/members) and the answer of
// POST /v1/encryption/rewrap.
//
// The server writes these types, the client and the CLI read them, and the store fills
// them from etcd; like api/v4 the package does no I/O and imports nothing of berth.
package cluster
