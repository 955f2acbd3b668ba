package agentapi

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// handleAgentCatalog lists, or watches (?watch=true), every service and endpoints object
// of the cluster for an agent, from the server's shared caches: five thousand agents
// following them cost no etcd watch each, and one connection each (an agent holds
// few). The watch starts from ?services= and ?endpoints= (the revisions of a list) and
// interleaves both kinds, so an agent whose stream breaks lists again rather than
// resuming. A revision older than a cache's history answers 410.
func (a *API) handleAgentCatalog(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	watch, err := httpapi.BoolParam(q.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if !watch {
		return a.listCatalog(w, r)
	}
	from := map[v4.Kind]int64{}
	for _, k := range catalogKinds {
		if from[k], err = httpapi.RevisionParam(k.Plural(), q.Get(k.Plural())); err != nil {
			return err
		}
	}
	ctx, cancel := httpapi.StreamContext(a.streams, r)
	defer cancel()
	var chans []<-chan store.Event
	for _, k := range catalogKinds {
		c := a.catalog[k]
		if err := httpapi.Synced(ctx, c); err != nil {
			return err
		}
		ch, err := c.Watch(ctx, "", "", from[k])
		if err != nil {
			return err
		}
		chans = append(chans, ch)
	}
	httpapi.Stream(ctx, w, mergeEvents(ctx, chans), httpapi.ObjectLine)
	return nil
}

// listCatalog answers the list of the catalog.
func (a *API) listCatalog(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	lists := map[v4.Kind]httpapi.ListBody{}
	for _, k := range catalogKinds {
		c := a.catalog[k]
		if err := httpapi.CacheCurrent(ctx, a.store, c); err != nil {
			return err
		}
		items, rev, err := c.List("", "")
		if err != nil {
			return err
		}
		if items == nil {
			items = []v4.Object{}
		}
		lists[k] = httpapi.ListBody{Kind: "List", ResourceVersion: strconv.FormatInt(rev, 10), Items: items}
	}
	httpapi.WriteJSON(w, http.StatusOK, v4.Catalog[v4.Object]{Kind: "Catalog", Services: lists[v4.KindService], Endpoints: lists[v4.KindEndpoint]})
	return nil
}

// mergeEvents interleaves the events of several watches into one channel, closed when
// ctx ends or any of them ends (its error event passed on first): the stream ends with
// its first broken watch. Its goroutines end with ctx.
func mergeEvents(ctx context.Context, chans []<-chan store.Event) <-chan store.Event {
	out := make(chan store.Event)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, ch := range chans {
		wg.Go(func() {
			defer cancel()
			for ev := range ch {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Type == store.Error {
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		cancel()
		close(out)
	}()
	return out
}
