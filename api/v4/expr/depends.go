package expr

import (
	"fmt"
	"slices"
	"strings"
)

// The results a depends expression may test, Argo's names.
const (
	Succeeded    = "Succeeded"
	Failed       = "Failed"
	Errored      = "Errored"
	Skipped      = "Skipped"
	Omitted      = "Omitted"
	Daemoned     = "Daemoned"
	AnySucceeded = "AnySucceeded" // a loop task: at least one item succeeded
	AllFailed    = "AllFailed"    // a loop task: every item failed or errored
)

// Results lists the results a depends expression may name after a task.
func Results() []string {
	return []string{Succeeded, Failed, Errored, Skipped, Omitted, Daemoned, AnySucceeded, AllFailed}
}

// Depends is a parsed `depends` expression of a DAG task.
type Depends struct {
	e     *Expr
	tasks []string
}

// ParseDepends reads a depends expression, whose words are "task" or "task.Result". A
// bare task means Argo's "(task.Succeeded || task.Skipped || task.Daemoned)".
// Comparisons and literals have no place in it.
func ParseDepends(s string) (*Depends, error) {
	e, err := Parse(s)
	if err != nil {
		return nil, err
	}
	d := &Depends{e: e}
	var bad error
	walk(e.root, func(n node) {
		if bad != nil {
			return
		}
		switch n := n.(type) {
		case *compare, *literal:
			bad = errorAt(n.pos(), "a depends expression has only task results joined by &&, || and !")
		case *ident:
			task, result, err := splitResult(n.name)
			if err != nil {
				bad = errorAt(n.at, "%v", err)
			} else if !slices.Contains(d.tasks, task) {
				d.tasks = append(d.tasks, task)
			}
			_ = result
		}
	})
	if bad != nil {
		return nil, bad
	}
	return d, nil
}

func splitResult(word string) (task, result string, err error) {
	task, result, dotted := strings.Cut(word, ".")
	switch {
	case task == "":
		return "", "", fmt.Errorf("%q: a task name is missing", word)
	case !dotted:
		return task, "", nil
	case !slices.Contains(Results(), result):
		return "", "", fmt.Errorf("%q: unknown result %q (known: %s)", word, result, strings.Join(Results(), ", "))
	}
	return task, result, nil
}

// Tasks lists the tasks the expression names, in order, once each.
func (d *Depends) Tasks() []string { return d.tasks }

// String returns the expression's source.
func (d *Depends) String() string { return d.e.String() }

// TaskState is what the engine knows of a finished task: its phase (Succeeded, Failed,
// Errored, Skipped, Omitted) and, for a loop, how many items succeeded and how many
// failed or errored of how many.
type TaskState struct {
	Phase               string
	Daemoned            bool
	Items, ItemsSuccess int
	ItemsFailed         int
}

// Eval evaluates the expression with the states of the tasks it names (every one of them
// finished: the engine waits for them first).
func (d *Depends) Eval(state func(task string) (TaskState, bool)) (bool, error) {
	return d.e.Eval(func(word string) (Value, error) {
		task, result, err := splitResult(word)
		if err != nil {
			return Value{}, err
		}
		st, ok := state(task)
		if !ok {
			return Value{}, fmt.Errorf("task %q has not finished", task)
		}
		return Bool(st.is(result)), nil
	})
}

func (st TaskState) is(result string) bool {
	switch result {
	case "":
		return st.Phase == Succeeded || st.Phase == Skipped || st.Daemoned
	case Daemoned:
		return st.Daemoned
	case AnySucceeded:
		return st.ItemsSuccess > 0
	case AllFailed:
		return st.Items > 0 && st.ItemsFailed == st.Items
	}
	return st.Phase == result
}
