// Package volumestest is a fake of the CSI controller calls (volumes.VolumeController)
// for the tests of the volume controller and of the claims.
package volumestest

import (
	"context"
	"fmt"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// Call is one call the fake received.
type Call struct {
	Node string
	Req  v4.CSIControllerRequest
}

// Fake answers each op with its Reply (CreateVolume's ID is the request's name) or the
// error its Fail gives, and records the calls. Safe for concurrent use.
type Fake struct {
	mu    sync.Mutex
	calls []Call
	fail  map[string]error
}

// Fail makes op fail with err from now on (nil: succeed again).
func (f *Fake) Fail(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[string]error{}
	}
	f.fail[op] = err
}

// Call implements volumes.VolumeController.
func (f *Fake) Call(_ context.Context, node string, req v4.CSIControllerRequest) (v4.CSIControllerReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Node: node, Req: req})
	if err := f.fail[req.Op]; err != nil {
		return v4.CSIControllerReply{}, err
	}
	switch req.Op {
	case v4.CSIOpCreate:
		return v4.CSIControllerReply{VolumeID: "vol-" + req.Name, Capacity: max(req.MinBytes, 1<<20),
			Context:  map[string]string{"created-for": req.Name},
			Topology: []v4.VolumeTopology{{Segments: map[string]string{"zone": "z1"}}}}, nil
	case v4.CSIOpPublish:
		return v4.CSIControllerReply{PublishContext: map[string]string{"device": fmt.Sprintf("/dev/fake-%s", req.NodeID)}}, nil
	}
	return v4.CSIControllerReply{}, nil
}

// Calls returns the calls of op received so far ("" for all of them).
func (f *Fake) Calls(op string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if op == "" || c.Req.Op == op {
			out = append(out, c)
		}
	}
	return out
}
