package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// `berth apply` changes nothing when the server refuses any of its documents: the
// namespaced ones go in one all-or-nothing request (/v1/apply), but the cluster-wide
// ones (apply_cluster.go) are put before it on routes of their own. So each of those is
// read before its put, and when a later put or the stream is refused, apply puts back
// what it changed, last first: the object as it was, or none. A configuration someone
// changed in between is left as they made it (its restore carries the version apply
// wrote, so the server refuses it), and the error says what could not be undone.

// undo puts back what one put changed.
type undo struct {
	what string // kind/name
	put  v4.ApplyResult
	run  func(ctx context.Context, c *client.Client, put v4.ApplyResult) error
}

// undoReader reads the object name as it is, and returns how to put it back after a put.
type undoReader func(ctx context.Context, c *client.Client, name string) (func(context.Context, *client.Client, v4.ApplyResult) error, error)

// undoTimeout bounds the undoing, which runs even when apply's context ended (an
// interrupt after the cluster-wide puts still undoes them).
const undoTimeout = 30 * time.Second

// undoOf reads what d's put would change.
func undoOf(ctx context.Context, c *client.Client, d clusterDoc) (undo, error) {
	var head struct {
		Kind     string                `json:"kind"`
		Metadata struct{ Name string } `json:"metadata"`
	}
	if err := json.Unmarshal(d.body, &head); err != nil || head.Metadata.Name == "" {
		return undo{}, fmt.Errorf("%s: a cluster-wide document needs metadata.name", d.doc.where())
	}
	run, err := d.kind.undoOf(ctx, c, head.Metadata.Name)
	if err != nil {
		return undo{}, fmt.Errorf("%s: read %s %s before writing it: %w", d.doc.where(), strings.ToLower(head.Kind), head.Metadata.Name, err)
	}
	return undo{what: strings.ToLower(head.Kind) + "/" + head.Metadata.Name, run: run}, nil
}

// undoPuts undoes undos, last first, after cause refused the apply: the error is cause,
// saying that the cluster-wide documents were put back, or which of them could not be.
func undoPuts(ctx context.Context, c *client.Client, undos []undo, cause error) error {
	if len(undos) == 0 {
		return cause
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	var left []string
	for _, u := range slices.Backward(undos) {
		if err := u.run(ctx, c, u.put); err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", u.what, err))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w\nnot undone, still as apply wrote them: %s", cause, strings.Join(left, "; "))
	}
	return fmt.Errorf("%w\nnothing applied: the %d cluster-wide documents written before were put back", cause, len(undos))
}

// priorityClassUndo puts the class name back as it is now, or deletes it.
func priorityClassUndo(ctx context.Context, c *client.Client, name string) (func(context.Context, *client.Client, v4.ApplyResult) error, error) {
	prior, err := c.PriorityClass(ctx, name)
	switch {
	case client.StatusOf(err) == http.StatusNotFound:
		return func(ctx context.Context, c *client.Client, _ v4.ApplyResult) error {
			return c.DeletePriorityClass(ctx, name)
		}, nil
	case err != nil:
		return nil, err
	}
	return func(ctx context.Context, c *client.Client, _ v4.ApplyResult) error {
		_, err := c.PutPriorityClass(ctx, prior)
		return err
	}, nil
}

// webhookUndo puts the configuration name back as it is now, or deletes it. The
// restore is conditional on the version apply wrote.
func webhookUndo(ctx context.Context, c *client.Client, name string) (func(context.Context, *client.Client, v4.ApplyResult) error, error) {
	prior, err := c.AdmissionWebhook(ctx, name)
	switch {
	case client.StatusOf(err) == http.StatusNotFound:
		return func(ctx context.Context, c *client.Client, _ v4.ApplyResult) error {
			return c.DeleteAdmissionWebhook(ctx, name)
		}, nil
	case err != nil:
		return nil, err
	}
	return func(ctx context.Context, c *client.Client, put v4.ApplyResult) error {
		if put.ResourceVersion == "" {
			return errors.New("the server did not say which version apply wrote")
		}
		restored := *prior
		restored.Metadata.ResourceVersion = put.ResourceVersion
		body, err := json.Marshal(&restored)
		if err != nil {
			return err
		}
		_, err = c.PutAdmissionWebhook(ctx, name, body)
		return err
	}, nil
}
