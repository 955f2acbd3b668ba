package driver

import v4 "github.com/berthhq/berth/api/v4"

// FollowResize calls set with each terminal size received from resize until done or
// resize closes (a nil resize returns at once): the loop of every driver that attaches a
// terminal (Interactive).
func FollowResize(resize <-chan v4.TermSize, done <-chan struct{}, set func(v4.TermSize)) {
	if resize == nil {
		return
	}
	for {
		select {
		case <-done:
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			set(sz)
		}
	}
}
