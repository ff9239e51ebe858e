package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel/storage"
)

var _ storage.Watcher = (*Store)(nil)

// rewatchDelay is how long a broken watch waits before it is created
// again, so that an etcd that refuses watches is not asked in a loop.
const rewatchDelay = 250 * time.Millisecond

// Watch reports the keys under prefix written by any process through a
// Store of the same etcd and Prefix, as storage.Watcher, from an etcd
// watch: fn runs in a goroutine of the watch. Watch returns once etcd has
// created the watch (bounded by ctx), so that every commit that ends after
// it is reported. The watch asks for a member with a leader: when it
// breaks (no leader, a compaction, a lost connection), it is created again
// and fn gets prefix, since changes may have been missed. It ends with
// stop, when the Store is closed, or when the client is closed; no call of
// fn starts after stop or Close has begun.
func (s *Store) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	if err := s.gate.Begin(ctx, s); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.watches))
	full := s.prefix + prefix
	w, err := s.startWatch(ctx, wctx, full)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.follow(wctx, w, full, fn)
	}()
	return func() { cancel(); <-done }, nil
}

// watch is one etcd watch and the cancel function that ends it.
type watch struct {
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

// startWatch creates a watch of the keys under full that lasts at most as
// long as wctx, and waits, as long as ctx lasts, until etcd has created it.
func (s *Store) startWatch(ctx, wctx context.Context, full string) (watch, error) {
	actx, cancel := context.WithCancel(wctx)
	ch := s.client.Watch(actx, full, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	fail := func(err error) (watch, error) {
		cancel()
		return watch{}, fmt.Errorf("etcdstore: watch %q: %w", full, err)
	}
	select {
	case resp, ok := <-ch:
		switch {
		case !ok:
			return fail(classify(errors.Join(wctx.Err(), s.client.Ctx().Err(), errWatchClosed)))
		case resp.Err() != nil:
			return fail(classify(resp.Err()))
		}
		return watch{ch: ch, cancel: cancel}, nil
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// errWatchClosed is the cause of a watch channel closed without a reason.
var errWatchClosed = errors.New("the watch was closed")

// follow calls fn with the keys of the events of w, the watch of the keys
// under full, until wctx ends or the client closes; it creates the watch
// again when it breaks, and then calls fn with the prefix.
func (s *Store) follow(wctx context.Context, w watch, full string, fn func(key string)) {
	for {
		if w.ch != nil {
			for resp := range w.ch {
				if resp.Err() != nil {
					break
				}
				for _, ev := range resp.Events {
					if wctx.Err() != nil {
						break // stopped or the Store closed: nothing more is reported
					}
					fn(string(ev.Kv.Key[len(s.prefix):]))
				}
			}
			w.cancel()
		}
		t := time.NewTimer(rewatchDelay)
		select {
		case <-wctx.Done():
			t.Stop()
			return
		case <-s.client.Ctx().Done():
			t.Stop()
			return
		case <-t.C:
		}
		var err error
		if w, err = s.startWatch(wctx, wctx, full); err == nil {
			fn(full[len(s.prefix):])
		}
	}
}
