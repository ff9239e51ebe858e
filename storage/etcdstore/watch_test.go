package etcdstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
	put := func(key string) {
		t.Helper()
		if err := other.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put(key, []byte("x")) }); err != nil {
			t.Fatal(err)
		}
	}
	put("w/1")
	for deadline := time.Now().Add(5 * time.Second); seen.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not report a commit of another Store")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the watch's goroutine sees the end
	before := seen.Load()
	put("w/2")
	time.Sleep(200 * time.Millisecond)
	if n := seen.Load(); n != before {
		t.Errorf("a closed Store's watch reported %d more commits", n-before)
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return after Close")
	}
}
