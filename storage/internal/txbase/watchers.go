package txbase

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Watchers are the watches of a store whose commits all happen in this
// process (storage.Watcher): the store gives the keys of each commit to
// Notify, after the commit, and Notify calls the watches whose prefix they
// start with. The zero value has no watch.
type Watchers struct {
	mu      sync.Mutex
	watches []*watch // copied on write: Notify reads it without mu
	list    atomic.Pointer[[]*watch]
}

type watch struct {
	prefix  string
	fn      func(key string)
	mu      sync.Mutex // held while fn runs: one call at a time, and stop waits
	stopped bool
}

// Add starts a watch of the keys under prefix and returns its stop
// function, which returns once no call of fn is in progress.
func (w *Watchers) Add(prefix string, fn func(key string)) (stop func()) {
	wt := &watch{prefix: prefix, fn: fn}
	w.mu.Lock()
	w.watches = append(w.watches, wt)
	w.publish()
	w.mu.Unlock()
	return func() { w.remove(wt) }
}

// Close stops every watch.
func (w *Watchers) Close() {
	w.mu.Lock()
	all := w.watches
	w.watches = nil
	w.publish()
	w.mu.Unlock()
	for _, wt := range all {
		wt.stop()
	}
}

func (w *Watchers) remove(wt *watch) {
	w.mu.Lock()
	for i, x := range w.watches {
		if x == wt {
			w.watches = append(w.watches[:i:i], w.watches[i+1:]...)
			break
		}
	}
	w.publish()
	w.mu.Unlock()
	wt.stop()
}

// publish makes the current list the one Notify reads; w.mu is held.
func (w *Watchers) publish() {
	list := append([]*watch(nil), w.watches...)
	w.list.Store(&list)
}

func (wt *watch) stop() {
	wt.mu.Lock()
	wt.stopped = true
	wt.mu.Unlock()
}

// Notify gives the keys of a commit to the watches whose prefix they start
// with. It costs one atomic load when there is no watch.
func (w *Watchers) Notify(keys []string) {
	list := w.list.Load()
	if list == nil || len(*list) == 0 || len(keys) == 0 {
		return
	}
	for _, wt := range *list {
		wt.mu.Lock()
		for _, k := range keys {
			if wt.stopped {
				break
			}
			if strings.HasPrefix(k, wt.prefix) {
				wt.fn(k)
			}
		}
		wt.mu.Unlock()
	}
}
