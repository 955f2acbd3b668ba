package docker

import "github.com/berthhq/berth/internal/driver"

// maxPullLayers bounds the layers a pull's progress keeps: an image has far fewer
// (Docker's limit is 127), and the stream is the daemon's word about a registry's image.
const maxPullLayers = 512

// pullTracker sums a pull's layer progress from the daemon's stream: each layer to
// download is announced ("Pulling fs layer"), reports its bytes ("Downloading",
// current/total), and completes ("Download complete", then "Pull complete"); a layer
// the node has ("Already exists") counts in nothing.
type pullTracker struct {
	image  string
	layers map[string]*pullLayer
}

type pullLayer struct {
	current, total int64
	downloaded     bool
}

func newPullTracker(image string) *pullTracker {
	return &pullTracker{image: image, layers: map[string]*pullLayer{}}
}

// add takes one message of the stream and reports whether the progress changed.
func (t *pullTracker) add(m *streamMessage) bool {
	if m.ID == "" {
		return false
	}
	switch m.Status {
	case "Pulling fs layer", "Waiting":
		return t.layer(m.ID) != nil && m.Status != "Waiting"
	case "Downloading":
		l := t.layer(m.ID)
		if l == nil || m.ProgressDetail.Total <= 0 {
			return false
		}
		l.current, l.total = min(max(m.ProgressDetail.Current, 0), m.ProgressDetail.Total), m.ProgressDetail.Total
		return true
	case "Download complete", "Pull complete":
		l, ok := t.layers[m.ID]
		if !ok || l.downloaded {
			return false
		}
		l.downloaded = true
		l.current = l.total
		return true
	}
	return false
}

// layer returns the layer of id, adding it while fewer than maxPullLayers are kept.
func (t *pullTracker) layer(id string) *pullLayer {
	if l, ok := t.layers[id]; ok {
		return l
	}
	if len(t.layers) >= maxPullLayers {
		return nil
	}
	l := &pullLayer{}
	t.layers[id] = l
	return l
}

// event is the progress so far.
func (t *pullTracker) event() driver.PullEvent {
	e := driver.PullEvent{Phase: driver.PullProgress, Image: t.image, Layers: len(t.layers)}
	for _, l := range t.layers {
		e.Current += l.current
		e.Total += l.total
		if l.downloaded {
			e.Done++
		}
	}
	return e
}
