package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/ctxtime"
	"github.com/berthhq/berth/internal/driver"
)

// The sync loop: list the node's task groups, reconcile them with what runs, then follow
// the watch. Any break (server down, watch compacted) lists and reconciles again after a
// backoff; nothing is ever stopped because the server cannot be reached.

// stableWatch is how long a watch must have lasted for the backoff to start over.
const stableWatch = time.Minute

func (a *Agent) syncLoop(ctx context.Context) {
	a.watchLoop(ctx, "lost the task group watch; workloads keep running, reconnecting", a.syncOnce)
}

// watchLoop runs once (a list and the watch that follows it) again and again until ctx
// ends, after a backoff that starts over once a watch lasted stableWatch; lost is logged
// at each break.
func (a *Agent) watchLoop(ctx context.Context, lost string, once func(context.Context) error) {
	bo := ctxtime.NewBackoff(500*time.Millisecond, 30*time.Second)
	for ctx.Err() == nil {
		start := time.Now()
		err := once(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > stableWatch {
			bo.Reset()
		}
		d := bo.Next()
		a.log.Warn(lost, "in", d.Round(time.Millisecond), "err", err)
		if !sleep(ctx, d) {
			return
		}
	}
}

// syncOnce lists, reconciles and watches until the watch breaks.
func (a *Agent) syncOnce(ctx context.Context) error {
	var tgs []*v4.TaskGroup
	var rv string
	err := a.servers.do(ctx, func(c *client.Client) error {
		var err error
		tgs, rv, err = c.AgentTaskGroups(ctx, a.cfg.NodeName)
		return err
	})
	if err != nil {
		return fmt.Errorf("list task groups: %w", err)
	}
	if err := a.reconcile(ctx, tgs); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch's reader goroutine
	var ch <-chan client.WatchEvent
	err = a.servers.do(ctx, func(c *client.Client) error {
		var err error
		ch, err = c.AgentWatchTaskGroups(wctx, a.cfg.NodeName, rv)
		return err
	})
	if err != nil {
		return fmt.Errorf("watch task groups: %w", err)
	}
	for ev := range ch {
		if ev.Type == client.EventError {
			return ev.Err
		}
		tg, ok := ev.Object.(*v4.TaskGroup)
		if !ok {
			continue
		}
		if ev.Type == client.EventDeleted || tg.Spec.Node != a.cfg.NodeName {
			a.taskGroupLeaves(tg)
			a.setDesired(tg, false)
			a.removeLater(tg.Metadata.Namespace, tg.Metadata.Name, "deleted on the server")
			continue
		}
		a.setDesired(tg, true)
		a.handle(ctx, tg, nil)
	}
	return errors.New("the watch ended")
}

// reconcile makes what runs match tgs, the full list of the node's task groups
// (docs/agent.md, The agent's loop, 2): it adopts running tasks of wanted task groups,
// starts wanted ones with nothing running and no terminal status, and stops and removes
// everything else, including the tasks and directories of task groups deleted while the
// agent was down (the checkpoint remembers those).
//
// A driver that cannot list its tasks (dockerd down) is blind: its task groups that may
// run somewhere are left alone, since starting them could run a second copy, while the
// ones no agent ever reported are started, so they fail at once with the driver's reason
// (the daemon is unreachable) instead of waiting unseen. The error that follows makes the
// sync loop reconcile again after its backoff, until the driver answers.
func (a *Agent) reconcile(ctx context.Context, tgs []*v4.TaskGroup) error {
	states, blind, listErr := a.driverStates(ctx)
	desired := make(map[string]*v4.TaskGroup, len(tgs))
	for _, tg := range tgs {
		desired[tgKey(tg.Metadata.Namespace, tg.Metadata.Name)] = tg
	}
	a.mu.Lock()
	a.desired = maps.Clone(desired) // its own: setDesired changes it while this reads desired
	a.mu.Unlock()

	for _, tg := range tgs {
		if blind[driverKind(tg)] && !a.safeWhileBlind(tg) {
			continue
		}
		a.handle(ctx, tg, states[tgKey(tg.Metadata.Namespace, tg.Metadata.Name)])
	}
	known := map[string]bool{}
	for _, p := range a.exec.List() {
		key := tgKey(p.Namespace, p.Name)
		known[key] = true
		if desired[key] == nil {
			a.removeLater(p.Namespace, p.Name, "no longer bound to this node")
		}
	}
	for key, sts := range states {
		if desired[key] == nil && !known[key] {
			a.stopOrphans(key, sts)
		}
	}
	for _, key := range a.ckpt.keys() {
		if desired[key] == nil && !known[key] && states[key] == nil {
			e, _ := a.ckpt.get(key)
			a.removeLater(e.Namespace, e.Name, "deleted while the agent was away")
		}
	}
	for _, key := range a.podNetworkKeys(ctx) {
		if desired[key] == nil && !known[key] && states[key] == nil {
			// Its tasks are gone but its CNI sandbox is not: removing the unknown pod
			// tears the network down.
			ns, name := splitKey(key)
			a.removeLater(ns, name, "its pod network outlived it")
		}
	}
	if listErr != nil {
		return fmt.Errorf("reconcile: %w", listErr)
	}
	return nil
}

// driverKind is the driver a task group's tasks run on.
func driverKind(tg *v4.TaskGroup) string { return driver.KindOf(&tg.Spec.Template.Spec) }

// safeWhileBlind reports whether a task group can be handled while its driver cannot
// list its tasks: the executor runs it already, or no agent ever reported it (so nothing
// of it can be running) and it is not to be stopped.
func (a *Agent) safeWhileBlind(tg *v4.TaskGroup) bool {
	if _, known := a.exec.Status(tg.Metadata.Namespace, tg.Metadata.Name); known {
		return true
	}
	// The controller creates task groups Staging; every agent report carries the host IP.
	fresh := tg.Status.Phase == "" || tg.Status.Phase == v4.StatusStaging && tg.Status.HostIP == ""
	return fresh && tg.Spec.Desired != v4.DesiredStopped
}

// ownedState is a task a driver runs, with that driver.
type ownedState struct {
	drv   driver.Driver
	state driver.State
}

// driverStates lists what every driver runs for this node of this cluster, by task group
// key (another cluster's tasks are never adopted nor stopped, whatever their node:
// ownership.go). The drivers that cannot list are returned as blind, with their errors
// joined.
func (a *Agent) driverStates(ctx context.Context) (map[string][]ownedState, map[string]bool, error) {
	out := map[string][]ownedState{}
	blind := map[string]bool{}
	var errs []error
	for _, name := range sortedKeys(a.drivers) {
		d := a.drivers[name]
		sts, err := d.List(ctx)
		if err != nil {
			blind[name] = true
			errs = append(errs, fmt.Errorf("list the tasks of the %s driver: %w", name, err))
			continue
		}
		for _, s := range sts {
			key := s.Labels[driver.LabelTaskGroup]
			if key == "" {
				continue // not berth's
			}
			if !a.owner.Owns(s.Labels) {
				continue // another cluster's, or another node's (a renamed node's tasks are left to an operator)
			}
			out[key] = append(out[key], ownedState{drv: d, state: s})
		}
	}
	return out, blind, errors.Join(errs...)
}

// setDesired records or forgets a task group the server binds to this node.
func (a *Agent) setDesired(tg *v4.TaskGroup, present bool) {
	key := tgKey(tg.Metadata.Namespace, tg.Metadata.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	if present {
		a.desired[key] = tg
	} else {
		delete(a.desired, key)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
