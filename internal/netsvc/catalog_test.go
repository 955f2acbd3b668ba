package netsvc

import (
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// The catalog is synced once both kinds were listed, and every subscriber hears of
// each change.
func TestCatalogSyncedAndSubscribers(t *testing.T) {
	c := NewCatalog("cluster.local")
	a, b := c.Subscribe(), c.Subscribe()
	synced := func() bool {
		select {
		case <-c.Synced():
			return true
		default:
			return false
		}
	}
	c.Put(webService()) // a watch event before any list: not synced
	c.Replace(v4.KindService, []v4.Object{webService()})
	if synced() {
		t.Fatal("synced before endpoints were listed")
	}
	c.Replace(v4.KindEndpoint, nil)
	c.Replace(v4.KindEndpoint, nil) // a second list closes nothing twice
	if !synced() {
		t.Fatal("not synced after both lists")
	}
	for i, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Errorf("subscriber %d not signalled", i)
		}
	}
}

// Serves follows the ready instances of every endpoints object, through puts, deletes
// and lists.
func TestCatalogServes(t *testing.T) {
	c := NewCatalog("cluster.local")
	eps := func(name string, ids ...string) *v4.Endpoints {
		e := &v4.Endpoints{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindEndpoint},
			Metadata: v4.ObjectMeta{Name: name, Namespace: "demo"}}
		for _, id := range ids {
			e.Endpoints = append(e.Endpoints, v4.Endpoint{Target: v4.TargetRef{ID: id}})
		}
		return e
	}
	c.Put(eps("a", "0.web", "1.web"))
	c.Put(eps("b", "0.web"))
	c.Put(eps("a", "1.web")) // 0.web leaves a, stays in b
	if !c.Serves("demo", "0.web") || !c.Serves("demo", "1.web") || c.Serves("other", "0.web") {
		t.Fatal("after puts")
	}
	c.Delete(eps("b"))
	if c.Serves("demo", "0.web") {
		t.Error("0.web serves after its last service went")
	}
	c.Replace(v4.KindEndpoint, nil)
	if c.Serves("demo", "1.web") {
		t.Error("1.web serves after an empty list")
	}
}
