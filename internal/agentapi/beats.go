package agentapi

import (
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// beatCache is what this server last wrote or read of each node's heartbeat (its
// agent's version and address, with the node Ready), so that a beat that changes nothing
// writes nothing and reads nothing. An agent that moves to another server costs that
// server one read on its next beat. The store's lease says whether the node stayed
// alive, so a node marked Lost meanwhile is always written Ready again; an entry is
// trusted for beatRecheck only, so a node removed behind the server's back (not through
// its API, which forgets the node's lease) is noticed within that time.
type beatCache struct {
	mu    sync.Mutex
	beats map[string]cachedBeat
}

type cachedBeat struct {
	hb      v4.AgentHeartbeat
	checked time.Time
}

// beatRecheck is how long a cached beat spares the node's read. What makes a node not
// Ready while its agent beats goes through its lease (the node lifecycle marks Lost
// only a node without one) or through this server (forget), so the read only catches
// what went astray: at 5,000 nodes, a minute was 83 reads a second.
const beatRecheck = 5 * time.Minute

func (c *beatCache) same(node string, hb v4.AgentHeartbeat) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.beats[node]
	return ok && time.Since(last.checked) < beatRecheck &&
		(hb.AgentVersion == "" || hb.AgentVersion == last.hb.AgentVersion) &&
		(hb.AgentAddress == "" || hb.AgentAddress == last.hb.AgentAddress)
}

func (c *beatCache) remember(node string, hb v4.AgentHeartbeat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.beats == nil {
		c.beats = map[string]cachedBeat{}
	}
	last := c.beats[node]
	if hb.AgentVersion != "" {
		last.hb.AgentVersion = hb.AgentVersion
	}
	if hb.AgentAddress != "" {
		last.hb.AgentAddress = hb.AgentAddress
	}
	last.checked = time.Now()
	c.beats[node] = last
}

func (c *beatCache) forget(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.beats, node)
}
