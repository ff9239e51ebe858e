package etcdstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// TestCloseEndsWatches: closing a Store made with New, whose client the
// caller keeps, ends its watches (storage.Watcher's contract): a commit
// through another Store is no longer reported, and stop returns.
func TestCloseEndsWatches(t *testing.T) {
	ctx := context.Background()
	prefix := etcdtest.Prefix()
	s := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
	other := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
	t.Cleanup(func() { other.Close() })
	var seen atomic.Int32
	stop, err := s.Watch(ctx, "w/", func(string) { seen.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	// A watch of a Store that stays open: when it reports a commit, etcd
	// has sent it to every watch.
	var otherSeen atomic.Int32
	otherStop, err := other.Watch(ctx, "w/", func(string) { otherSeen.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer otherStop()
	put := func(key string) {
		t.Helper()
		if err := other.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put(key, []byte("x")) }); err != nil {
			t.Fatal(err)
		}
	}
	put("w/1")
	keeltest.Until(t, "the watch reports a commit of another Store", func() bool { return seen.Load() >= 1 && otherSeen.Load() >= 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, otherBefore := seen.Load(), otherSeen.Load()
	put("w/2")
	keeltest.Until(t, "the open Store's watch reports the commit after Close", func() bool { return otherSeen.Load() > otherBefore })
	if n := seen.Load(); n != before {
		t.Errorf("a closed Store's watch reported %d more commits", n-before)
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(keeltest.WaitBound):
		t.Fatalf("stop did not return within %s after Close", keeltest.WaitBound)
	}
}
