package cli

import (
	"sort"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// notifyColumns are the columns of `berth get notifies`.
func notifyColumns() kindColumns {
	return kindColumns{[]string{"URL", "EVENTS", "DELIVERED", "FAILED"}, func(o v4.Object) []string {
		n, _ := o.(*v4.Notify)
		if n == nil {
			return []string{"", "", "", ""}
		}
		return []string{n.Spec.URL, notifyEventList(n), strconv.Itoa(n.Status.Delivered), strconv.Itoa(n.Status.Failed)}
	}}
}

func notifyEventList(n *v4.Notify) string {
	if len(n.Spec.Events) == 0 {
		return "all"
	}
	return strings.Join(n.Spec.Events, ",")
}

// notify describes a callback subscription and how its deliveries went. Header values
// are not shown: they usually hold tokens.
func (d *describer) notify(n *v4.Notify) {
	d.kv("URL", "%s", n.Spec.URL)
	d.kv("Events", "%s", notifyEventList(n))
	namespaces := n.Metadata.Namespace + " (its own)"
	if len(n.Spec.Namespaces) > 0 {
		namespaces = strings.Join(n.Spec.Namespaces, ",")
	}
	d.kv("Namespaces", "%s", namespaces)
	if len(n.Spec.Headers) > 0 {
		names := make([]string, 0, len(n.Spec.Headers))
		for k := range n.Spec.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		d.kv("Headers", "%s", strings.Join(names, ", "))
	}
	retries := v4.DefaultNotifyMaxRetries
	if n.Spec.MaxRetries != nil {
		retries = *n.Spec.MaxRetries
	}
	d.kv("Timeout", "%ds, %d retries", n.Spec.TimeoutSeconds, retries)
	d.kv("Delivered", "%d", n.Status.Delivered)
	d.kv("Failed", "%d", n.Status.Failed)
	d.delivery("Last delivery", n.Status.LastDelivery)
	d.delivery("Last failure", n.Status.LastFailure)
}

func (d *describer) delivery(key string, x *v4.NotifyDelivery) {
	if x == nil {
		d.kv(key, "%s", none)
		return
	}
	line := x.Event + " about " + x.Subject + ", " + strconv.Itoa(x.Attempts) + " attempt(s)"
	switch {
	case x.Error != "": // it names the HTTP status when there was one
		line += ": " + x.Error
	case x.Code != 0:
		line += ", HTTP " + strconv.Itoa(x.Code)
	}
	d.kv(key, "%s (%s ago)", line, age(x.Time, d.now))
}
