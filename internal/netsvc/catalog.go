package netsvc

import (
	"maps"
	"slices"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// Catalog is the agent's copy of every service and endpoints object of the cluster,
// fed by its list and watch of them, and the names they make (the zone the DNS server
// answers from). It is safe for concurrent use.
type Catalog struct {
	zone *zone

	mu sync.Mutex
	// subscribers are signalled (without blocking) after every change: the service
	// proxy, a load-balancer group.
	subscribers []chan struct{}
	// listed holds the kinds Replace has filled; synced is closed once it has both.
	listed    map[v4.Kind]bool
	synced    chan struct{}
	services  map[string]*v4.Service
	endpoints map[string]*v4.Endpoints
	// ready counts, by "namespace/task group", the endpoints that list the instance
	// ready (Serves).
	ready map[string]int
}

// NewCatalog returns an empty catalog whose names end in domain ("cluster.local").
func NewCatalog(domain string) *Catalog {
	return &Catalog{zone: newZone(fqdn(domain)), listed: map[v4.Kind]bool{}, synced: make(chan struct{}), ready: map[string]int{},
		services: map[string]*v4.Service{}, endpoints: map[string]*v4.Endpoints{}}
}

func key(m *v4.ObjectMeta) string { return m.Namespace + "/" + m.Name }

// Put adds or replaces a service or an endpoints object.
func (c *Catalog) Put(obj v4.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *v4.Service:
		c.services[key(&o.Metadata)] = o
		c.refresh(key(&o.Metadata))
	case *v4.Endpoints:
		c.setEndpoints(key(&o.Metadata), o)
		c.refresh(key(&o.Metadata))
	}
}

// Delete removes a service or an endpoints object.
func (c *Catalog) Delete(obj v4.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(obj.GetMeta())
	switch obj.(type) {
	case *v4.Service:
		delete(c.services, k)
	case *v4.Endpoints:
		c.setEndpoints(k, nil)
	default:
		return
	}
	c.refresh(k)
}

// Replace makes the objects of kind exactly objs (a fresh list after a broken watch:
// what went meanwhile is dropped).
func (c *Catalog) Replace(kind v4.Kind, objs []v4.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := make(map[string]bool, len(objs))
	for _, o := range objs {
		k := key(o.GetMeta())
		keep[k] = true
		switch o := o.(type) {
		case *v4.Service:
			c.services[k] = o
		case *v4.Endpoints:
			c.setEndpoints(k, o)
		}
		c.refresh(k)
	}
	if !c.listed[v4.KindService] || !c.listed[v4.KindEndpoint] {
		c.listed[kind] = true
		if c.listed[v4.KindService] && c.listed[v4.KindEndpoint] {
			close(c.synced)
		}
	}
	switch kind {
	case v4.KindService:
		for k := range c.services {
			if !keep[k] {
				delete(c.services, k)
				c.refresh(k)
			}
		}
	case v4.KindEndpoint:
		for k := range c.endpoints {
			if !keep[k] {
				c.setEndpoints(k, nil)
				c.refresh(k)
			}
		}
	}
}

// setEndpoints stores (nil: deletes) the endpoints of service k and counts the ready
// instances they list; c.mu is held.
func (c *Catalog) setEndpoints(k string, e *v4.Endpoints) {
	if old := c.endpoints[k]; old != nil {
		for _, ep := range old.Endpoints {
			id := old.Metadata.Namespace + "/" + ep.Target.ID
			if c.ready[id]--; c.ready[id] <= 0 {
				delete(c.ready, id)
			}
		}
	}
	if e == nil {
		delete(c.endpoints, k)
		return
	}
	c.endpoints[k] = e
	for _, ep := range e.Endpoints {
		c.ready[e.Metadata.Namespace+"/"+ep.Target.ID]++
	}
}

// Serves reports whether task group ns/name is a ready instance of a service: the
// agent lets it leave before it stops it.
func (c *Catalog) Serves(ns, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready[ns+"/"+name] > 0
}

// refresh rebuilds the names of service k and signals the change; c.mu is held.
func (c *Catalog) refresh(k string) {
	c.zone.set(k, c.services[k], c.endpoints[k])
	for _, ch := range c.subscribers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Synced is closed once the catalog holds a first list of services and of endpoints:
// before, an empty catalog says nothing, and what forwards traffic on the node must not
// take it for "no service" (an agent that restarts would cut what it serves).
func (c *Catalog) Synced() <-chan struct{} { return c.synced }

// Subscribe returns a channel signalled after changes (several may be signalled
// once), for one reader.
func (c *Catalog) Subscribe() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{}, 1)
	c.subscribers = append(c.subscribers, ch)
	return ch
}

// ServiceView is a service with its endpoints (nil when none are known yet).
type ServiceView struct {
	Service   *v4.Service
	Endpoints *v4.Endpoints
}

// Services returns every service with its endpoints, ordered by namespace and name.
func (c *Catalog) Services() []ServiceView {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ServiceView, 0, len(c.services))
	for _, k := range slices.Sorted(maps.Keys(c.services)) {
		out = append(out, ServiceView{Service: c.services[k], Endpoints: c.endpoints[k]})
	}
	return out
}
