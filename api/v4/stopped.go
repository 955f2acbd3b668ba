package v4

import (
	"fmt"
	"slices"
	"strings"
)

// Stopped instances (docs/lifecycle.md, "Stopped instances"): an instance of an
// application, process or deployment can be stopped on purpose and started again. Its
// index is listed in spec.stoppedInstances; the controllers stop its run and neither
// restart nor replace it, and the instance count still counts it. berth stop and berth
// start change the list. An update that leaves the list out keeps the stored one (a
// tool that does not know the field must not start what a user stopped); one that sends
// it, even empty, sets it.

// StoppedInstancesOf points at the stopped instances of obj, nil for kinds without
// numbered instances.
func StoppedInstancesOf(obj Object) *[]int {
	switch o := obj.(type) {
	case *Application:
		return &o.Spec.StoppedInstances
	case *Process:
		return &o.Spec.StoppedInstances
	case *Deployment:
		return &o.Spec.StoppedInstances
	}
	return nil
}

// InstancesOf points at spec.instance of an application, process or deployment; for
// other kinds, at a zero of its own.
func InstancesOf(obj Object) *int {
	switch o := obj.(type) {
	case *Application:
		return &o.Spec.Instance
	case *Process:
		return &o.Spec.Instance
	case *Deployment:
		return &o.Spec.Instance
	}
	return new(int)
}

// StoppedBelow is the part of stopped that names instances of a workload of n
// instances: a scale-down forgets the stopped instances it removes.
func StoppedBelow(stopped []int, n int) []int {
	var out []int
	for _, i := range stopped {
		if i < n {
			out = append(out, i)
		}
	}
	return out
}

// StoppedMessage says how many of a workload's n instances are stopped on request and
// which, for its status: the first MaxBackOffListed of them, as the list may name every
// instance of a workload of MaxInstances and the status is written at each change.
func StoppedMessage(stopped []int, n int) string {
	below := StoppedBelow(stopped, n)
	listed := fmt.Sprint(below)
	if len(below) > MaxBackOffListed {
		listed = strings.TrimSuffix(fmt.Sprint(below[:MaxBackOffListed]), "]") + " ...]"
	}
	return fmt.Sprintf("%d of %d instances stopped on request: %s", len(below), n, listed)
}

// IsStopped reports whether instance idx is in the list of stopped instances, which is
// sorted (Default, SetStopped and StoppedBelow keep it so): the controllers ask it for
// every index of a workload at each pass, and a search through a list of 100,000 indexes
// for each of 100,000 instances would take seconds.
func IsStopped(stopped []int, idx int) bool {
	_, found := slices.BinarySearch(stopped, idx)
	return found
}

// SetStopped returns stopped with instance idx added (stop) or removed (start), sorted,
// and whether that changed anything.
func SetStopped(stopped []int, idx int, stop bool) ([]int, bool) {
	if IsStopped(stopped, idx) == stop {
		return stopped, false
	}
	out := slices.Clone(stopped)
	if stop {
		out = append(out, idx)
		slices.Sort(out)
		return out, true
	}
	return slices.DeleteFunc(out, func(i int) bool { return i == idx }), true
}

// CarryStopped keeps the stored object's stopped instances when an update leaves the
// field out (nil), forgetting those beyond the updated instance count.
func CarryStopped(updated, stored Object) {
	u, s := StoppedInstancesOf(updated), StoppedInstancesOf(stored)
	if u == nil || s == nil || *u != nil || updated.GetKind() != stored.GetKind() {
		return
	}
	*u = StoppedBelow(*s, *InstancesOf(updated))
}

// validateStopped checks a list of stopped instances of a workload of n instances:
// every index names one of them, once.
func validateStopped(path string, stopped []int, n int, errs *FieldErrors) {
	seen := map[int]bool{}
	for k, i := range stopped {
		switch {
		case i < 0 || i >= n:
			errs.add(indexPath(path, k), "instance %d does not exist: indexes run from 0 to spec.instance-1 (%d)", i, n-1)
		case seen[i]:
			errs.add(indexPath(path, k), "instance %d is listed twice", i)
		}
		seen[i] = true
	}
}
