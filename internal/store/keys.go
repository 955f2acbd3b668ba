package store

import (
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// prefix is the root of every key berth writes; the "v1" lets a later layout coexist.
const prefix = "/berth/v1/"

// Key layout (docs/store.md):
//
//	/berth/v1/objects/{kind}/{namespace}/{name}   canonical JSON of the object
//	/berth/v1/objects/{kind}/{name}               the same for cluster-scoped kinds (nodes)
//	/berth/v1/raw/{kind}/{namespace}/{name}       content type, "\n", submitted bytes
//	/berth/v1/eventlog/{lastnano}/{ns}/{obj}/{id} an event record (events_keys.go)
//	/berth/v1/eventids/{ns}/{obj}/{id}            where that record is, and its count
//	/berth/v1/crds/{plural.group}                 a custom resource definition (customresources.go)
//	/berth/v1/customresources/{crd}/{ns}/{name}   a custom resource of that definition
//	/berth/v1/wfnodes/{ns}/{workflow}/{uid}/{id}  an offloaded workflow node (wfnodes.go)
//
// Names and namespaces cannot contain "/" (v4 validation), so prefixes never overlap.

func objectKey(kind v4.Kind, ns, name string) string {
	return prefix + "objects/" + scopedName(kind, ns, name)
}

func rawKey(kind v4.Kind, ns, name string) string {
	return prefix + "raw/" + scopedName(kind, ns, name)
}

// scopedName is "{kind}/{namespace}/{name}", or "{kind}/{name}" for a cluster-scoped kind
// (whose namespace checkKey requires to be empty).
func scopedName(kind v4.Kind, ns, name string) string {
	if !kind.Namespaced() {
		return string(kind) + "/" + name
	}
	return string(kind) + "/" + ns + "/" + name
}

// objectPrefix is the range of one kind in one namespace, or in all when ns is "".
func objectPrefix(kind v4.Kind, ns string) string {
	if ns == "" {
		return prefix + "objects/" + string(kind) + "/"
	}
	return prefix + "objects/" + string(kind) + "/" + ns + "/"
}

// clusterEventNS stands in for an empty namespace in event keys; "_" cannot appear in
// namespaces, so it never clashes with a real one.
const clusterEventNS = "_"

// checkName rejects identifiers that would break the key layout. Full validation is
// api/v4's job; this only keeps a bad caller from writing outside its key range.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("%s %q contains a '/'", what, s)
	}
	return nil
}
