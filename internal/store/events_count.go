package store

import "strings"

// The namespace and cluster bounds of event records are kept with counts in memory, so
// that a new record costs no read of etcd: a count of a namespace's index or of the whole
// log visits every key in it, in etcd's index (at the bound, 10,000 or 50,000 keys), and
// counting every hundred new records made the counts most of what a burst's records cost
// etcd. A scope (a namespace, or the cluster) is counted in etcd when this server first
// writes to it, then only when the records it knows of cross the bound and its slack, or
// after a tenth of the bound of new records here (for other servers' writes, below); a
// trim then deletes the excess. Records deleted here (trims) are taken off; records that
// expire (their lease) are not, so the count in memory only errs high until the next
// count corrects it: at worst an early count, never a missed trim of what this server
// wrote.
//
// Other servers' records are seen only at a count. Each server counts a scope after a
// tenth of its bound of its own new records in it, and every server trims when over, so
// a scope exceeds its bound by at most its slack plus a tenth of the bound for each other
// server writing into it meanwhile (with three servers writing evenly, 20%), until one
// of them counts next. That is fine for a view whose records live an hour: the bound
// still holds within a fifth, the excess goes at the next count, and the space estimate
// of the bounds (docs/operations.md, "Events") allows for it.

// scopeCount is what this server knows of the records of one scope.
type scopeCount struct {
	n        int  // the last count, plus the records created here since, less those deleted here
	since    int  // records created here since the last count began
	known    bool // n started from a count
	counting bool // a count (and trim) of the scope is under way: one at a time
}

// scopeCounts are the scopes' counts; eventState.mu guards them.
type scopeCounts struct {
	ns    map[string]*scopeCount
	total scopeCount
}

// maxNamespaceCounts bounds scopeCounts.ns; when full it starts over (each namespace is
// then counted again at its next record here).
const maxNamespaceCounts = 10_000

// boundCheck is the counts (and trims if over) that new records made due.
type boundCheck struct {
	ns    []dueNamespace
	total bool // count the cluster's records
}

// dueNamespace is a namespace to count, and its count here (which, when the map started
// over meanwhile, nothing reads any more: harmless).
type dueNamespace struct {
	name string
	sc   *scopeCount
}

// created counts new records of the namespaces given (one entry per record, all of them
// written) and returns the checks now due, marking them under way.
func (c *scopeCounts) created(namespaces []string, lim eventLimits) boundCheck {
	if c.ns == nil {
		c.ns = map[string]*scopeCount{}
	}
	touched := make(map[string]*scopeCount, 1)
	for _, ns := range namespaces {
		sc := touched[ns]
		if sc == nil {
			if sc = c.ns[ns]; sc == nil {
				if len(c.ns) >= maxNamespaceCounts {
					clear(c.ns)
				}
				sc = &scopeCount{}
				c.ns[ns] = sc
			}
			touched[ns] = sc
		}
		sc.n++
		sc.since++
	}
	c.total.n += len(namespaces)
	c.total.since += len(namespaces)
	var due boundCheck
	nsSlack := max(lim.perNamespace/100, 1)
	for ns, sc := range touched {
		if sc.due(lim.perNamespace, nsSlack) {
			due.ns = append(due.ns, dueNamespace{ns, sc})
		}
	}
	due.total = c.total.due(lim.total, max(lim.totalSlack, 1))
	return due
}

// due reports whether the scope is to be counted now: the first time, past its bound and
// slack, or after a tenth of its bound of new records here; and marks the check under way
// (the records created here are counted from then on).
func (sc *scopeCount) due(bound, slack int) bool {
	if sc.counting || (sc.known && sc.n < bound+slack && sc.since < max(bound/trimSlack, 1)) {
		return false
	}
	sc.counting, sc.since = true, 0
	return true
}

// counted records a count that found n records (ok false: it failed, and the scope is
// counted again at its next record). The records created here while it ran are added:
// some may be in n already, which errs high. The check stays under way until done.
func (sc *scopeCount) counted(n int, ok bool) {
	if !ok {
		sc.known = false
		return
	}
	sc.n, sc.known = n+sc.since, true
}

// deleted takes records deleted here off their namespace's count and the total.
func (c *scopeCounts) deleted(ns string, n int) {
	if sc := c.ns[ns]; sc != nil {
		sc.n = max(sc.n-n, 0)
	}
	c.total.n = max(c.total.n-n, 0)
}

// namespaceOfIndex is the namespace segment of an index key ("" when it is not one).
func namespaceOfIndex(indexKey string) string {
	rest, ok := strings.CutPrefix(indexKey, eventIndexPrefix)
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}
