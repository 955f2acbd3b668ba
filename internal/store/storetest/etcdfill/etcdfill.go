// Package etcdfill fills an etcd until it refuses for want of space, for the tests of
// what berth does then: the store's own (which cannot import storetest, as it imports
// the store) and the server's.
package etcdfill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Quota is an etcd quota small enough to fill in a second: bbolt's file grows by the
// pages written (the quota counts the file's high-water mark, not what it pre-allocates).
const Quota = 32 << 20

// ValueSize is small enough that the values of a full etcd leave few free pages between
// them (1 MiB ones leave up to a fifth of the file free, 256 KiB ones up to 21% when the
// machine is busy): live data then fills the quota well past the 80% that recovery
// counts as live data.
const ValueSize = 64 << 10

// Prefix is where Fill writes: below berth's keys, so that what clears those clears these.
const Prefix = "/berth/v1/fill/"

// Fill writes ValueSize values below Prefix until etcd refuses with NOSPACE: under one
// key (history fills etcd) or under a key each (live data does). It fails the test if
// etcd takes twice Quota without refusing.
func Fill(t testing.TB, c *clientv3.Client, history bool) {
	t.Helper()
	val := strings.Repeat("x", ValueSize)
	for i := range 2 * Quota / ValueSize {
		key := Prefix + "0"
		if !history {
			key = fmt.Sprintf("%s%d", Prefix, i)
		}
		_, err := c.Put(context.Background(), key, val)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	t.Fatalf("etcd took %d MiB under a %d MiB quota", 2*Quota>>20, Quota>>20)
}
