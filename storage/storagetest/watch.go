package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/storage"
)

// watchLog records what a watch reports.
type watchLog struct {
	mu   sync.Mutex
	keys []string
	ch   chan struct{} // buffered 1: a key arrived
}

func newWatchLog() *watchLog { return &watchLog{ch: make(chan struct{}, 1)} }

func (l *watchLog) add(key string) {
	l.mu.Lock()
	l.keys = append(l.keys, key)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *watchLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.keys)
}

// waitFor waits until every key of want was reported, and at least n
// keys, or waitLimit.
func (l *watchLog) waitFor(t *testing.T, n int, want ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := l.seen()
		missing := len(got) < n
		for _, k := range want {
			missing = missing || !slices.Contains(got, k)
		}
		if !missing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch reported %q within %v, want %q among them", got, waitLimit, want)
		}
		select {
		case <-l.ch:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// testWatch: a store that is a storage.Watcher reports the keys under the
// prefix that later commits put or delete, not those of a failed Update nor
// of other prefixes, and nothing after stop; a view of the store
// (storage.Sub) reports its own keys. A store that is no Watcher is
// skipped by this case only.
func testWatch(t *testing.T, s storage.Store) {
	if _, ok := s.(storage.Watcher); !ok {
		t.Skip("the store is not a storage.Watcher")
	}
	ctx := context.Background()
	log := newWatchLog()
	stop, err := storage.Watch(ctx, s, "w/", log.add)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	sub := newWatchLog()
	stopSub, err := storage.Watch(ctx, storage.Sub(s, "w/"), "", sub.add)
	if err != nil {
		t.Fatalf("Watch of a view: %v", err)
	}
	defer stopSub()

	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("w/a", []byte("1")); err != nil {
			return err
		}
		return tx.Put("x/outside", []byte("1"))
	})
	errRefused := errors.New("refused")
	if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("w/failed", []byte("1")); err != nil {
			return err
		}
		return errRefused
	}); !errors.Is(err, errRefused) {
		t.Fatalf("failing Update: %v", err)
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Put("w/b", []byte("2")) })
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Delete("w/a") })
	log.waitFor(t, 3, "w/a", "w/b") // put a, put b, delete a
	sub.waitFor(t, 3, "a", "b")
	for _, k := range log.seen() {
		if k != "w/a" && k != "w/b" && k != "w/" {
			t.Fatalf("watch of w/ reported %q (all: %q)", k, log.seen())
		}
	}

	stop()
	n := len(log.seen())
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Put("w/c", []byte("3")) })
	sub.waitFor(t, 4, "c") // the write was seen by the other watch, not this one
	if got := log.seen(); len(got) != n {
		t.Fatalf("a stopped watch reported %q", got[n:])
	}
}
