package containerd

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/berthhq/berth/internal/driver"
)

// maxPullLayers bounds the layers a pull's progress keeps: an image has far fewer, and
// the manifest is the registry's word.
const maxPullLayers = 512

// pullTracker measures a pull as the Docker driver's does: the layers the manifests
// name that the node lacks (a layer already in the content store counts in nothing),
// their sizes, and how much of each containerd has written so far (its ingests, read
// from the content store: containerd's client has no progress stream).
type pullTracker struct {
	image string
	cs    content.Store

	mu     sync.Mutex
	layers map[digest.Digest]*pullLayer
	last   driver.PullEvent // the event told last
}

type pullLayer struct {
	current, total int64
	done           bool
}

func newPullTracker(image string, cs content.Store) *pullTracker {
	return &pullTracker{image: image, cs: cs, layers: map[digest.Digest]*pullLayer{}}
}

// wrap is the pull's handler wrapper: the children of each manifest the pull reads
// announce its layers. It sits inside the unpacker's wrapper, which fetches the
// layers itself, so it sees every layer before the fetch begins.
func (t *pullTracker) wrap(h images.Handler) images.Handler {
	return images.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		children, err := h.Handle(ctx, desc)
		if err == nil {
			for _, c := range children {
				if images.IsLayerType(c.MediaType) {
					t.announce(ctx, c)
				}
			}
		}
		return children, err
	})
}

// announce adds a layer the pull downloads, unless the node has it.
func (t *pullTracker) announce(ctx context.Context, desc ocispec.Descriptor) {
	if _, err := t.cs.Info(ctx, desc.Digest); err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.layers[desc.Digest]; ok || len(t.layers) >= maxPullLayers {
		return
	}
	t.layers[desc.Digest] = &pullLayer{total: max(desc.Size, 0)}
}

// report reads the progress every `every` until ctx ends and tells progress each time
// it changed.
func (t *pullTracker) report(ctx context.Context, every time.Duration, progress func(driver.PullEvent)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if e, changed := t.poll(ctx); changed {
				progress(e)
			}
		}
	}
}

// poll reads the content store's ingests and completed layers, and returns the
// progress and whether it differs from what was told last.
func (t *pullTracker) poll(ctx context.Context) (driver.PullEvent, bool) {
	statuses, err := t.cs.ListStatuses(ctx)
	if err != nil {
		return driver.PullEvent{}, false
	}
	written := make(map[digest.Digest]int64, len(statuses))
	for _, st := range statuses {
		// An ingest's ref is remotes.MakeRefKey's: "layer-<digest>" for a layer.
		if d, ok := strings.CutPrefix(st.Ref, "layer-"); ok {
			written[digest.Digest(d)] = st.Offset
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for dg, l := range t.layers {
		if l.done {
			continue
		}
		if n, ok := written[dg]; ok {
			l.current = min(max(n, 0), l.total)
		} else if _, err := t.cs.Info(ctx, dg); err == nil {
			l.done, l.current = true, l.total
		}
	}
	e := t.event()
	if e.Layers == 0 || e == t.last { // nothing to tell before a manifest named a layer
		return e, false
	}
	t.last = e
	return e, true
}

// event is the progress so far; t.mu is held.
func (t *pullTracker) event() driver.PullEvent {
	e := driver.PullEvent{Phase: driver.PullProgress, Image: t.image, Layers: len(t.layers)}
	for _, l := range t.layers {
		e.Current += l.current
		e.Total += l.total
		if l.done {
			e.Done++
		}
	}
	return e
}
