package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

type eventsFlags struct {
	allNamespaces bool
	watch         bool
	forObject     string
	limit         int
}

// defaultEventsLimit is how many events berth events prints unless told otherwise: the
// most recent ones, as a terminal shows the last lines.
const defaultEventsLimit = 500

func newEventsCommand(o *options) *cobra.Command {
	var f eventsFlags
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List recent events (creates, updates, deletes, failures)",
		Example: "  berth events -A\n" +
			"  berth events -A --limit 0   # every event the server keeps\n" +
			"  berth events -n ns-a --for process/gamesvc\n" +
			"  berth events -w",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd, o, f)
		},
	}
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "events of every namespace")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "after listing, stream new events")
	cmd.Flags().StringVar(&f.forObject, "for", "", "only events of one object, as KIND/NAME")
	cmd.Flags().IntVar(&f.limit, "limit", defaultEventsLimit, "print the N most recently seen events at most (0: all)")
	return cmd
}

func (f eventsFlags) filter(ns string) (v4.EventFilter, error) {
	filter := v4.EventFilter{Namespace: ns}
	if f.allNamespaces {
		filter.Namespace = ""
	}
	if f.forObject == "" {
		return filter, nil
	}
	kindStr, name, ok := strings.Cut(f.forObject, "/")
	if !ok || name == "" {
		return filter, fmt.Errorf("--for %q: want KIND/NAME", f.forObject)
	}
	kind, err := kindArg(kindStr)
	if err != nil {
		return filter, fmt.Errorf("--for: %w", err)
	}
	filter.Kind, filter.Name = kind, name
	return filter, nil
}

func runEvents(cmd *cobra.Command, o *options, f eventsFlags) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	filter, err := f.filter(o.namespace)
	if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmdContext(cmd))
	defer cancel() // ends the watch goroutine on every return
	// Watch before listing, so no event falls between the two; the ones seen in
	// both are printed once.
	var stream <-chan client.EventWatch
	if f.watch {
		if stream, err = c.WatchEvents(ctx, filter); err != nil {
			return err
		}
	}
	if f.limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", f.limit)
	}
	lctx, lcancel := o.requestContext(cmd)
	events, total, err := recentEvents(lctx, c, filter, f.limit)
	lcancel()
	if err != nil {
		return err
	}
	if len(events) < total {
		fmt.Fprintf(o.env.stderr, "Showing the %d most recent of %d events (--limit 0 shows all).\n", len(events), total)
	}
	p := eventPrinter{w: o.out(), format: format, allNS: filter.Namespace == "", now: o.env.now}
	if !f.watch {
		if len(events) == 0 && format == outTable {
			fmt.Fprintln(o.env.stderr, "No events found.")
			return nil
		}
		return p.list(events)
	}
	seen := make(map[v4.Event]bool, len(events))
	for _, e := range events {
		seen[e] = true
	}
	// TYPE starts as wide as "Warning", so a first warning does not shift the columns.
	p.st = &streamTable{w: o.out(), widths: []int{0, len("Warning")}}
	if p.allNS {
		p.st.widths = []int{0, 0, len("Warning")}
	}
	if err := p.first(events); err != nil {
		return err
	}
	for item := range stream {
		if item.Err != nil {
			return item.Err
		}
		if seen[item.Event] {
			continue
		}
		if err := p.one(item.Event); err != nil {
			return err
		}
	}
	return nil
}

// recentEvents reads every page of the events matching filter and keeps the last limit
// of them (the most recently seen; all with 0); total counts them all.
func recentEvents(ctx context.Context, c *client.Client, filter v4.EventFilter, limit int) (kept []v4.Event, total int, err error) {
	err = c.EachEventPage(ctx, filter, func(p client.EventPage) error {
		total += len(p.Items)
		kept = append(kept, p.Items...)
		if limit > 0 && len(kept) > 2*limit { // drop the oldest now and then, not at every page
			kept = append(kept[:0], kept[len(kept)-limit:]...)
		}
		return nil
	})
	if limit > 0 && len(kept) > limit {
		kept = kept[len(kept)-limit:]
	}
	return kept, total, err
}

// eventPrinter prints events as a table (LAST SEEN TYPE REASON OBJECT COUNT MESSAGE) or
// as JSON/YAML.
type eventPrinter struct {
	w      io.Writer
	st     *streamTable // set while watching
	format outputFormat
	allNS  bool
	now    func() time.Time
}

func (p eventPrinter) list(events []v4.Event) error {
	switch p.format {
	case outJSON, outYAML:
		return printStructured(p.w, p.format, struct {
			Kind  string     `json:"kind"`
			Items []v4.Event `json:"items"`
		}{"EventList", events})
	case outName:
		for _, e := range events {
			fmt.Fprintln(p.w, objectName(e.Kind, e.Name))
		}
		return nil
	}
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		rows = append(rows, p.row(e))
	}
	return writeTable(p.w, p.headerCells(), rows)
}

func (p eventPrinter) headerCells() []string {
	h := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"}
	if p.allNS {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

func (p eventPrinter) row(e v4.Event) []string {
	r := []string{age(e.Time, p.now()), e.Type, e.Reason, objectName(e.Kind, e.Name), strconv.Itoa(e.Occurrences()), e.Message}
	if p.allNS {
		r = append([]string{e.Namespace}, r...)
	}
	return r
}

// first prints the events listed when a watch starts: the header and the rows of a table
// together (so they align), or one document per event.
func (p eventPrinter) first(events []v4.Event) error {
	if p.format != outTable {
		for _, e := range events {
			if err := p.one(e); err != nil {
				return err
			}
		}
		return nil
	}
	rows := [][]string{p.headerCells()}
	for _, e := range events {
		rows = append(rows, p.row(e))
	}
	return p.st.write(rows...)
}

// one prints a single event while watching: a table row, a JSON document or a YAML one.
func (p eventPrinter) one(e v4.Event) error {
	switch p.format {
	case outJSON, outYAML:
		if p.format == outYAML {
			fmt.Fprintln(p.w, "---")
		}
		return printStructured(p.w, p.format, e)
	case outName:
		_, err := fmt.Fprintln(p.w, objectName(e.Kind, e.Name))
		return err
	}
	return p.st.write(p.row(e))
}
