package agent

import (
	"context"
	"errors"
	"maps"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
)

// Registration and heartbeats: the node as the agent sees it.

// nodeObject is the node the agent registers: the machine's resources, its addresses,
// and the labels and attributes it was given.
func (a *Agent) nodeObject() *v4.Node {
	c, err := Capacity(a.cfg.DataDir)
	if err != nil {
		a.log.Warn("node resources are incomplete", "err", err)
	}
	n := &v4.Node{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode},
		Metadata: v4.ObjectMeta{Name: a.cfg.NodeName, Labels: a.cfg.Labels},
		Spec: v4.NodeSpec{
			Hostname: a.cfg.NodeName, IP: a.cfg.IP,
			Capacity: c, Allocatable: Allocatable(c),
			PortRanges: a.cfg.PortRanges,
		},
		Status: v4.NodeStatus{Phase: v4.NodeReady, AgentVersion: Version, AgentAddress: a.addr,
			BusyPorts: a.busyPorts.list(), CSIPlugins: a.csiPlugins.List()}, // a registration must not clear them
	}
	if r := a.revocableSent.Load(); r != nil {
		n.Status.Revocable = r // nor the lending report (old, it lends nothing)
	}
	n.Spec.Attributes = cloneAttributes(a.cfg.Attributes) // the cards add theirs
	if a.containerRuntime != "" {
		if n.Spec.Attributes.Text == nil {
			n.Spec.Attributes.Text = map[string]string{}
		}
		n.Spec.Attributes.Text[AttrContainerRuntime] = a.containerRuntime
	}
	if a.gpus != nil {
		a.gpus.Describe(n)
	}
	if a.plugins != nil {
		a.plugins.Describe(n)
	}
	a.describeLBGroup(n)
	a.describeFlexVolumes(n)
	a.describeRuntimes(n)
	return n
}

// cloneAttributes copies the configured attributes, which the registration adds to.
func cloneAttributes(at v4.NodeAttributes) v4.NodeAttributes {
	return v4.NodeAttributes{Text: maps.Clone(at.Text), Scalar: maps.Clone(at.Scalar), Set: maps.Clone(at.Set)}
}

// register registers the node, retrying with backoff until it succeeds or ctx ends
// (false). A refusal that will not change (a bad node name) is retried too, slowly, and
// logged as an error: the agent has nothing else to do until an operator fixes it.
func (a *Agent) register(ctx context.Context) bool {
	bo := ctxtime.NewBackoff(500*time.Millisecond, 30*time.Second)
	for {
		n := a.nodeObject()
		err := a.servers.do(ctx, func(c *client.Client) error {
			_, err := c.AgentRegister(ctx, n)
			return err
		})
		if err == nil {
			a.csiRegistered(n.Status.CSIPlugins)
			a.log.Info("node registered", "ip", n.Spec.IP, "agentAddress", a.addr,
				"cpu", n.Spec.Allocatable.CPU, "memoryMB", n.Spec.Allocatable.MemoryMB)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d := bo.Next()
		if failover(err) {
			a.log.Warn("cannot register the node; will retry", "in", d.Round(time.Millisecond), "err", err)
		} else {
			a.log.Error("the server refused the node's registration; will retry", "in", d.Round(time.Millisecond), "err", err)
		}
		if !sleep(ctx, d) {
			return false
		}
	}
}

// heartbeatLoop sends a heartbeat every HeartbeatInterval, on a heartbeat stream to the
// current server (the client's AgentHeartbeats): one connection and a line per beat. A
// stream that ends is opened again at the next beat, on the next server when this one
// cannot serve. A 404 means an operator deleted the node: the agent registers it again.
//
// The server may ask for another interval (it grows with the cluster): the agent beats
// at it while the stream that asked lives, and at its own again on a new stream until
// that one's server says otherwise (beatInterval).
func (a *Agent) heartbeatLoop(ctx context.Context) {
	every := a.cfg.HeartbeatInterval
	t := time.NewTicker(every)
	defer t.Stop()
	var beats *beatStream
	defer func() { beats.close() }()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		beats, err = a.beat(ctx, beats)
		if iv := beatInterval(a.cfg.HeartbeatInterval, beats); iv != every {
			a.log.Info("heartbeat interval changed", "from", every, "to", iv)
			every = iv
			t.Reset(every)
		}
		switch {
		case err == nil:
			if failing {
				a.log.Info("heartbeats go through again")
			}
			failing = false
		case ctx.Err() != nil:
			return
		case client.IsNotFound(err):
			a.log.Warn("the node was deleted on the server; registering it again")
			if !a.register(ctx) {
				return
			}
		default:
			if !failing {
				a.log.Warn("heartbeat failed; workloads keep running", "err", err)
			}
			failing = true
		}
	}
}

// beatStream is an open heartbeat stream and the server it goes to.
type beatStream struct {
	to     *client.Client
	stream *client.HeartbeatStream
}

func (b *beatStream) close() {
	if b != nil {
		b.stream.Close()
	}
}

// beat sends one beat on b, opening a stream first when there is none or b failed, and
// returns the stream to use next time (nil after a failure). A new stream's first beat
// says the agent's version and address (the server writes them when they changed) and
// is awaited: a server that cannot serve it is left for the next at once, as a beat's
// call would be.
func (a *Agent) beat(ctx context.Context, b *beatStream) (*beatStream, error) {
	if b != nil {
		err := b.stream.Beat(v4.AgentHeartbeat{})
		if err == nil {
			return b, nil
		}
		b.close()
		if failover(err) {
			a.servers.moveOn(b.to)
		} else if !errors.Is(err, client.ErrHeartbeatStreamStuck) {
			return nil, err // 404 (the node was deleted), 400, ...
		}
	}
	hb := v4.AgentHeartbeat{AgentVersion: Version, AgentAddress: a.addr}
	err := a.servers.do(ctx, func(c *client.Client) error {
		s, err := c.AgentHeartbeats(ctx, a.cfg.NodeName)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, firstBeatWait)
		defer cancel()
		if err := s.BeatAndWait(wctx, hb); err != nil {
			s.Close()
			return err
		}
		b = &beatStream{to: c, stream: s}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// beatInterval is the interval to beat at: the one b's server asked for, else own (no
// stream, or a server that asks for none).
func beatInterval(own time.Duration, b *beatStream) time.Duration {
	if b == nil {
		return own
	}
	if iv := b.stream.Interval(); iv > 0 {
		return iv
	}
	return own
}

// firstBeatWait bounds the wait for the acknowledgement of a stream's first beat.
const firstBeatWait = 5 * time.Second
