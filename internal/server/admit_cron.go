package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
)

// allowSubMinuteFlag names the server option that admits sub-minute schedules, in
// the refusal that points to it.
const allowSubMinuteFlag = "--allow-sub-minute-schedules"

// admitSchedule refuses a cronjob's or cronworkflow's schedule that fires more than
// once a minute (`@every 10s`) unless the operator allowed such schedules: api/v4 parses
// them (the syntax is the same), the cluster decides (docs/cron.md).
func admitSchedule(_ context.Context, a *admission, t target) error {
	if t.obj == nil || a.s.subMinute {
		return nil
	}
	sched, _, _, ok := v4.CronParts(t.obj)
	if !ok {
		return nil
	}
	s, err := sched.Parse()
	if err != nil || !v4.SubMinute(s) {
		return nil // api/v4 reported a bad schedule already
	}
	return httpapi.InvalidObject(t.obj, v4.FieldErrors{{Field: "spec.schedule",
		Message: fmt.Sprintf("@every: %s fires more than once a minute; a server started with %s admits it (fast test schedules)",
			s.Every(), allowSubMinuteFlag)}})
}

// cronRoutes registers the trigger of cronjobs and cronworkflows.
func (s *Server) cronRoutes(mux *httpapi.Mux) {
	for _, k := range []v4.Kind{v4.KindCronJob, v4.KindCronWorkflow} {
		mux.Handle("POST /v1/namespaces/{ns}/"+k.Plural()+"/{name}/actions/trigger", on(acl.VerbWrite, string(k)), s.triggerOf(k))
	}
}

// triggerOf is the handler that starts a run of a cron object of kind now and answers
// it (201). The run is the requester's write: they need the right to write jobs (or
// workflows) in the namespace and the privileges its pods ask for, as if they applied it.
func (s *Server) triggerOf(kind v4.Kind) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error { return s.trigger(w, r, kind) }
}

func (s *Server) trigger(w http.ResponseWriter, r *http.Request, kind v4.Kind) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	a := s.newAdmission(r, opCreate, nil)
	run, err := controller.TriggerCron(ctx, s.store, kind, r.PathValue("ns"), r.PathValue("name"), time.Now(),
		func(o v4.Object) error {
			if err := a.authorize(ctx, o); err != nil {
				return err
			}
			return s.hookAction(ctx, "actions/trigger", opCreate, o) // admit_webhook.go
		})
	if err != nil {
		return err
	}
	s.record(run, "Triggered", fmt.Sprintf("started by hand from %s %s", kind, r.PathValue("name")))
	s.record(run, "Created", "created")
	httpapi.WriteJSON(w, http.StatusCreated, run)
	return nil
}
