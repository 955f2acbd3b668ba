package cache

import (
	v4 "github.com/berthhq/berth/api/v4"
)

// objectKey is the key an object is cached under: "namespace/name".
func objectKey(o v4.Object) string {
	m := o.GetMeta()
	return m.Namespace + "/" + m.Name
}

// put stores o under key and indexes it, replacing what was there; c.mu is held. An
// index value that did not change is left as it is (most changes are of an object's
// status, which no index reads).
func (c *Cache) put(key string, o v4.Object) {
	if c.cfg.Keep != nil {
		o = c.cfg.Keep(o)
	}
	old, had := c.objs[key]
	c.objs[key] = o
	for name, fn := range c.cfg.Indexes {
		v := fn(o)
		if had {
			was := fn(old)
			if was == v {
				continue
			}
			c.unindexValue(name, was, key)
		}
		set := c.index[name][v]
		if set == nil {
			set = map[string]struct{}{}
			c.index[name][v] = set
		}
		set[key] = struct{}{}
	}
}

// unindex removes key's object from the indexes; c.mu is held.
func (c *Cache) unindex(key string) {
	old, ok := c.objs[key]
	if !ok {
		return
	}
	for name, fn := range c.cfg.Indexes {
		c.unindexValue(name, fn(old), key)
	}
}

// unindexValue removes key from index name's value v; c.mu is held.
func (c *Cache) unindexValue(name, v, key string) {
	if set := c.index[name][v]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(c.index[name], v)
		}
	}
}
