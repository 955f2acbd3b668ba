package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// A write judged against a resource quota carries the quota fences of its namespaces
// (store.QuotaFence, docs/policy.md "Exactness"): its transaction commits only if no
// other fenced write of those namespaces, from any server, committed since the usage was
// counted. When one did, the admission counts the usage again and judges the request's
// objects again, then tries the write again; quotaRetries such rounds in a row end in 409.

// quotaRetries bounds the rounds of a write whose namespaces' fences keep moving: each
// round means another server committed a write of the namespace meanwhile, so a write
// that loses this many is in a namespace written faster than it can be judged.
const quotaRetries = 5

// fencedWrite runs write with ctx carrying the admission's quota fences, and while it
// fails with store.ErrQuotaFence, judges the quota again and retries.
func (a *admission) fencedWrite(ctx context.Context, write func(context.Context) error) error {
	for round := 1; ; round++ {
		err := write(store.WithQuotaFence(ctx, &a.quota.fence))
		if !errors.Is(err, store.ErrQuotaFence) {
			return err
		}
		if round == quotaRetries {
			return fenceConflict(err, round)
		}
		if err := a.rejudgeQuota(ctx); err != nil {
			return err
		}
	}
}

// rejudgeQuota counts the usage of the request's namespaces again, with their fences as
// they are now, and judges the targets judged before against it. The namespaces' locks
// stay held. The fences start empty: a namespace whose resource quota went away
// meanwhile is counted without one, and the fence it had must not bind the write.
func (a *admission) rejudgeQuota(ctx context.Context) error {
	judged := a.quota.judged
	a.quota.byNS, a.quota.judged = nil, nil
	a.quota.fence.Reset()
	for _, t := range judged {
		if err := admitQuota(ctx, a, t); err != nil {
			return err
		}
	}
	return nil
}

// fenceConflict is the 409 of a write that lost its quota fence rounds times in a row.
func fenceConflict(err error, rounds int) error {
	return httpapi.Errorf(http.StatusConflict,
		"%v: judged %d times against a usage other servers' writes kept changing; try again", err, rounds).
		WithDetail("quota", "other writes of the namespace committed while this one was checked against its quota")
}
