package loopback

import (
	"sync"
	"sync/atomic"
	"time"
)

// Load is a continuous load of requests from several goroutines, bounded in time and in
// count, that counts the failures: the load-balancer tests check with it that nothing
// fails while the backends change.
type Load struct {
	sent, failed atomic.Int64
	firstErr     atomic.Value // the first failure's message
	stop         chan struct{}
	wg           sync.WaitGroup
}

// StartLoad runs request over and over in each of workers goroutines until Stop, for at
// most limit and max requests in all.
func StartLoad(workers int, limit time.Duration, max int64, request func() error) *Load {
	l := &Load{stop: make(chan struct{})}
	for range workers {
		l.wg.Go(func() {
			for end := time.Now().Add(limit); time.Now().Before(end) && l.sent.Load() < max; {
				select {
				case <-l.stop:
					return
				default:
				}
				l.sent.Add(1)
				if err := request(); err != nil {
					l.failed.Add(1)
					l.firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	return l
}

// Stop ends the load and returns how many requests were sent, how many failed and the
// first failure's message (nil for none).
func (l *Load) Stop() (sent, failed int64, firstErr any) {
	close(l.stop)
	l.wg.Wait()
	return l.sent.Load(), l.failed.Load(), l.firstErr.Load()
}
