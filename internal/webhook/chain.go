package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Refusal is a write the hooks refuse: a hook denied it, a call failed under
// failurePolicy Fail, or a patch would rename or move the object.
type Refusal struct {
	Hook string
	// Denied: the hook answered allowed false, with Message and its Code (a 4xx, 403
	// when it gave none).
	Denied  bool
	Message string
	Code    int
	// Forbidden is the patch refused (its Field); Err is a failed call's error.
	Forbidden *ForbiddenPatchError
	Err       error
}

func (r *Refusal) Error() string {
	switch {
	case r.Denied:
		msg := r.Message
		if msg == "" {
			msg = "no reason given"
		}
		return fmt.Sprintf("admission webhook %s denied the request: %s", r.Hook, msg)
	case r.Forbidden != nil:
		return fmt.Sprintf("admission webhook %s: %v", r.Hook, r.Forbidden)
	}
	return fmt.Sprintf("admission webhook %s failed and its failurePolicy is Fail: %v", r.Hook, r.Err)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Status is the HTTP status of the refusal: the hook's 4xx code (403 by default) for a
// denial, 422 for a forbidden patch, 502 for a failed hook (the server in front of a
// hook that did not answer, as a gateway).
func (r *Refusal) Status() int {
	switch {
	case r.Denied:
		if r.Code >= 400 && r.Code < 500 {
			return r.Code
		}
		return http.StatusForbidden
	case r.Forbidden != nil:
		return http.StatusUnprocessableEntity
	}
	return http.StatusBadGateway
}

// Matching are the hooks of hooks that apply to a.
func Matching(hooks []*Hook, a Attributes) []*Hook {
	var out []*Hook
	for _, h := range hooks {
		if h.Matches(a) {
			out = append(out, h)
		}
	}
	return out
}

// Mutate calls the mutating hooks in their order, each with the object as the earlier
// ones left it, and then once more each hook with reinvocationPolicy IfNeeded that a
// later hook changed the object after. It returns the object (req.Object when no hook
// changed it) and whether it changed; a *Refusal refuses the write.
func (c *Client) Mutate(ctx context.Context, hooks []*Hook, req Request) ([]byte, bool, error) {
	obj, changes := []byte(req.Object), 0
	// The object's identity, read once: every patch is checked against it.
	id, err := identityOf(obj, "object")
	if err != nil {
		return nil, false, err
	}
	// Whether one call changed the object matters only to re-invoke a hook; without
	// such a hook one comparison at the end answers for the chain (comparing is
	// decoding both objects).
	each := slices.ContainsFunc(hooks, func(h *Hook) bool { return h.Reinvoke })
	after := make([]int, len(hooks)) // changes counted when hook i's call ended
	for i, h := range hooks {
		next, changed, err := c.mutateOnce(ctx, h, req, obj, id, each)
		if err != nil {
			return nil, false, err
		}
		if changed {
			obj, changes = next, changes+1
		}
		after[i] = changes
	}
	for i, h := range hooks {
		if !h.Reinvoke || changes == after[i] {
			continue
		}
		next, changed, err := c.mutateOnce(ctx, h, req, obj, id, each)
		if err != nil {
			return nil, false, err
		}
		if changed {
			obj, changes = next, changes+1
		}
	}
	if changes > 0 && !each && jsonEqual(obj, req.Object) {
		return req.Object, false, nil // the patches set what was there
	}
	return obj, changes > 0, nil
}

// mutateOnce calls h with obj and applies its patch. It answers whether the patch
// changed obj: by value when compare is set, else by bytes (a patch that sets what is
// there then counts as a change, and the chain compares once at its end).
func (c *Client) mutateOnce(ctx context.Context, h *Hook, req Request, obj []byte, id identity, compare bool) ([]byte, bool, error) {
	req.Object = obj
	start := time.Now()
	resp, err := c.Call(ctx, h, &req)
	if err == nil && !resp.Allowed {
		c.observe(h, &req, Denied, time.Since(start), nil)
		return nil, false, denial(h, resp)
	}
	var patch, out []byte
	if err == nil {
		patch, err = resp.PatchOf()
	}
	if err == nil && patch != nil {
		out, err = applyPatch(obj, id, patch)
	}
	if fe, ok := errors.AsType[*ForbiddenPatchError](err); ok {
		c.observe(h, &req, Failed, time.Since(start), err)
		return nil, false, &Refusal{Hook: h.ID(), Forbidden: fe, Err: err}
	}
	if err != nil {
		c.observe(h, &req, Failed, time.Since(start), err)
		if h.Ignore {
			return obj, false, nil
		}
		return nil, false, &Refusal{Hook: h.ID(), Err: err}
	}
	if out == nil || bytes.Equal(out, obj) || (compare && jsonEqual(out, obj)) {
		c.observe(h, &req, Allowed, time.Since(start), nil)
		return obj, false, nil
	}
	c.observe(h, &req, Patched, time.Since(start), nil)
	return out, true, nil
}

func denial(h *Hook, resp *Response) *Refusal {
	r := &Refusal{Hook: h.ID(), Denied: true}
	if resp.Status != nil {
		r.Message, r.Code = truncate(resp.Status.Message, 1024), resp.Status.Code
	}
	return r
}

// Validate calls the validating hooks, at most maxParallel at once (started in their
// order), and waits for all; the first refusal in their order refuses the write,
// whichever answered first, so the answer does not depend on the hooks' timing. They
// all see the same request, encoded once. Their patches, if any, are not applied.
// When ctx ends first, the hooks not yet called are not called, and the write is
// refused with ctx's error: an Ignore hook's failure lets a write through, a hook that
// was never asked must not.
func (c *Client) Validate(ctx context.Context, hooks []*Hook, req Request) error {
	body, err := encodeReview(&req)
	if err != nil {
		return err
	}
	errs := make([]error, len(hooks))
	turns := make(chan struct{}, c.maxParallel)
	var wg sync.WaitGroup
	defer wg.Wait() // no call outlives Validate
	for i, h := range hooks {
		select {
		case turns <- struct{}{}: // each call ends within its hook's timeout
		case <-ctx.Done():
			return fmt.Errorf("validating admission webhooks: %d of %d not called: %w", len(hooks)-i, len(hooks), context.Cause(ctx))
		}
		wg.Go(func() {
			defer func() { <-turns }()
			errs[i] = c.validateOnce(ctx, h, req, body)
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("validating admission webhooks: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) validateOnce(ctx context.Context, h *Hook, req Request, body reviewBody) error {
	start := time.Now()
	resp, err := c.call(ctx, h, &req, body)
	switch {
	case err != nil:
		c.observe(h, &req, Failed, time.Since(start), err)
		if h.Ignore {
			return nil
		}
		return &Refusal{Hook: h.ID(), Err: err}
	case !resp.Allowed:
		c.observe(h, &req, Denied, time.Since(start), nil)
		return denial(h, resp)
	}
	c.observe(h, &req, Allowed, time.Since(start), nil)
	return nil
}
