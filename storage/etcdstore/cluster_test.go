package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// clusterLog is what the writers of TestClusterMemberLoss report.
type clusterLog struct {
	mu          sync.Mutex
	acked       map[string]bool // the item keys of acknowledged Updates
	afterKill   int             // acknowledged Updates that started after the kill
	unavailable int             // Updates that failed with keel.KindUnavailable
	firstErr    error           // the first of them
	killedAt    time.Time       // zero before the kill
}

// TestClusterMemberLoss runs a Store over a cluster of three etcd processes
// (etcdtest.StartCluster). Writers commit Updates while the raft leader is
// killed: no acknowledged write is lost, each Update is applied whole, and
// writes go on with two members. With a second member killed, the cluster
// has no quorum: an Update and a View fail within Options.RequestTimeout
// with keel.KindUnavailable, and a caller's own deadline keeps its kind.
// When both members return, the same Store serves again.
func TestClusterMemberLoss(t *testing.T) {
	begin := time.Now()
	c := etcdtest.StartCluster(t, 3)
	t.Logf("3 members healthy in %v", time.Since(begin).Round(time.Millisecond))
	ctx := context.Background()
	const requestTimeout = 2 * time.Second
	s, err := etcdstore.Open(ctx, c.Endpoints(), &etcdstore.Options{Prefix: etcdtest.Prefix(), RequestTimeout: requestTimeout})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// baseline is the slowest of a few Updates of the healthy cluster, on
	// this machine under its present load: the slack of the real-time
	// bounds below is derived from it.
	var baseline time.Duration
	for range 5 {
		start := time.Now()
		if err := bump(ctx, s, "baseline"); err != nil {
			t.Fatalf("an Update of the healthy cluster: %v", err)
		}
		baseline = max(baseline, time.Since(start))
	}
	slack := max(time.Second, 20*baseline)
	t.Logf("an Update of the healthy cluster takes up to %v: a slack of %v", baseline.Round(time.Millisecond), slack.Round(time.Millisecond))

	// Each writer w commits Updates that read its counter "count/w",
	// and write it one higher with the item "item/w/<count>": an Update
	// applied in part would leave a gap or an item beyond the counter.
	const writers = 4
	writing := time.Now()
	log := &clusterLog{acked: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { clusterWriter(t, s, w, log, stop) })
	}
	stopWriters := func() {
		if stop != nil {
			close(stop)
			stop = nil
			wg.Wait()
		}
	}
	defer stopWriters()
	acks := func() (all, afterKill int) {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.acked), log.afterKill
	}
	waitFor := func(what string, ok func(all, afterKill int) bool) {
		t.Helper()
		keeltest.Eventually(t, what, func() error {
			if all, after := acks(); !ok(all, after) {
				return fmt.Errorf("%d writes acknowledged, %d after the kill", all, after)
			}
			return nil
		})
	}

	waitFor("50 acknowledged writes", func(all, _ int) bool { return all >= 50 })
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	log.killedAt = time.Now()
	log.mu.Unlock()
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	lctx, cancel := context.WithTimeout(ctx, keeltest.WaitBound)
	newLeader, err := c.WaitLeader(lctx)
	cancel()
	if err != nil {
		t.Fatalf("after killing leader %s: %v", leader.Name, err)
	}
	elected := time.Since(killedAt)
	waitFor("100 writes acknowledged after the leader was killed", func(_, after int) bool { return after >= 100 })
	stopWriters()
	log.mu.Lock()
	t.Logf("killed leader %s; %s leads after %v; in %v, %d writes acknowledged (%d started after the kill), %d failed unavailable (first: %v)",
		leader.Name, newLeader.Name, elected.Round(time.Millisecond), time.Since(writing).Round(time.Millisecond),
		len(log.acked), log.afterKill, log.unavailable, log.firstErr)
	log.mu.Unlock()

	// No acknowledged write is lost, and every Update was applied whole.
	err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for w := range writers {
			var n int
			if v, err := tx.Get(fmt.Sprintf("count/%d", w)); err != nil {
				return err
			} else if n, err = strconv.Atoi(string(v)); err != nil {
				return err
			}
			var items []string
			err := tx.Scan(fmt.Sprintf("item/%d/", w), storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
				items = append(items, k)
				return nil
			})
			if err != nil {
				return err
			}
			if len(items) != n || (n > 0 && items[n-1] != itemKey(w, n)) {
				t.Errorf("writer %d: counter %d, and %d items %v...: an Update was applied in part", w, n, len(items), items[:min(3, len(items))])
			}
			for _, k := range items {
				delete(log.acked, k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View of the writes: %v", err)
	}
	if len(log.acked) > 0 {
		t.Errorf("%d acknowledged writes lost, such as %v", len(log.acked), anyKey(log.acked))
	}

	// Quorum lost: bounded failures of kind Unavailable.
	second := newLeader
	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s too: one member of three runs", second.Name)
	ops := []struct {
		name string
		run  func(context.Context) error
	}{
		{"Update", func(ctx context.Context) error { return bump(ctx, s, "quorum") }},
		{"blind Update", func(ctx context.Context) error { // no read: the commit waits
			return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put("blind", []byte("x")) })
		}},
		{"View", func(ctx context.Context) error {
			return s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				_, err := tx.Get("count/0")
				return err
			})
		}},
	}
	var opsWG sync.WaitGroup
	for _, op := range ops {
		opsWG.Go(func() {
			// A call sent to a member as it dies fails at once
			// (unavailable, EOF); the next go to the member left, which
			// has no leader: they fail after RequestTimeout, and say so.
			for attempt := 1; ; attempt++ {
				// A guard far beyond RequestTimeout, so that a store
				// that waits for the quorum fails the test instead of
				// hanging it.
				guard := 4*requestTimeout + 2*slack
				gctx, cancel := context.WithTimeout(ctx, guard)
				start := time.Now()
				err := op.run(gctx)
				took := time.Since(start)
				cancel()
				t.Logf("%s without quorum failed after %v: %v", op.name, took.Round(time.Millisecond), err)
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					t.Errorf("%s without quorum still waited after %v: %v", op.name, guard, err)
					return
				case !errors.Is(err, keel.KindUnavailable) || keel.KindOf(err) != keel.KindUnavailable:
					t.Errorf("%s without quorum = %v (kind %v), want an error of kind unavailable", op.name, err, keel.KindOf(err))
					return
				case took > requestTimeout+slack:
					t.Errorf("%s without quorum failed after %v, want about RequestTimeout (%v, with a slack of %v)", op.name, took, requestTimeout, slack)
					return
				case strings.Contains(err.Error(), "Options.RequestTimeout"):
					return
				case attempt == 3:
					t.Errorf("%s without quorum = %q, want it to name Options.RequestTimeout by the third attempt", op.name, err)
					return
				}
			}
		})
		opsWG.Go(func() {
			// The caller's own deadline, shorter than RequestTimeout,
			// keeps its kind. The member may fail the request before the
			// 200ms (its own "request timed out" for a request it lost
			// with the quorum, or its connection breaking as the other
			// member dies, on a loaded machine): such an attempt does not
			// reach the caller's deadline, proves nothing either way, and
			// is made again.
			for attempt := 1; ; attempt++ {
				const deadline = 200 * time.Millisecond
				dctx, cancel := context.WithTimeout(ctx, deadline)
				start := time.Now()
				err := op.run(dctx)
				took := time.Since(start)
				cancel()
				switch {
				case errors.Is(err, context.DeadlineExceeded) && keel.KindOf(err) == keel.KindDeadlineExceeded:
					return
				case attempt < 3 && keel.KindOf(err) == keel.KindUnavailable && took < deadline:
					t.Logf("%s without quorum, with a 200ms ctx, failed before it after %v (%v): made again", op.name, took, err)
					continue
				}
				t.Errorf("%s without quorum, with a 200ms ctx = %v (kind %v), want the ctx's deadline", op.name, err, keel.KindOf(err))
				return
			}
		})
	}
	opsWG.Wait()

	// Both members back: the same Store serves again.
	restarted := time.Now()
	for _, m := range []*etcdtest.Member{leader, second} {
		rctx, cancel := context.WithTimeout(ctx, keeltest.WaitBound)
		err := m.Restart(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	keeltest.Eventually(t, "a successful Update after the restart", func() error { return bump(ctx, s, "recovered") })
	t.Logf("members restarted; the Store wrote again after %v", time.Since(restarted).Round(time.Millisecond))
	lctx, cancel = context.WithTimeout(ctx, keeltest.WaitBound)
	defer cancel()
	if _, err := c.WaitLeader(lctx); err != nil {
		t.Errorf("after the restart: %v", err)
	}
	t.Logf("test took %v", time.Since(begin).Round(time.Millisecond))
}

// clusterWriter commits Updates of writer w until stop is closed (see
// TestClusterMemberLoss), recording them in log.
func clusterWriter(t *testing.T, s *etcdstore.Store, w int, log *clusterLog, stop chan struct{}) {
	counter := fmt.Sprintf("count/%d", w)
	for {
		select {
		case <-stop:
			return
		default:
		}
		log.mu.Lock()
		afterKill := !log.killedAt.IsZero()
		log.mu.Unlock()
		var item string
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			n := 0
			v, err := tx.Get(counter)
			switch {
			case err == nil:
				if n, err = strconv.Atoi(string(v)); err != nil {
					return err
				}
			case !errors.Is(err, storage.ErrNotFound):
				return err
			}
			item = itemKey(w, n+1)
			if err := tx.Put(counter, []byte(strconv.Itoa(n+1))); err != nil {
				return err
			}
			return tx.Put(item, []byte("x"))
		})
		log.mu.Lock()
		switch {
		case err == nil:
			log.acked[item] = true
			if afterKill {
				log.afterKill++
			}
		case errors.Is(err, keel.KindUnavailable):
			// Not acknowledged: it may or may not have been applied.
			if log.unavailable == 0 {
				log.firstErr = err
			}
			log.unavailable++
		default:
			t.Errorf("writer %d: Update: %v, want success or an error of kind unavailable", w, err)
		}
		log.mu.Unlock()
		if err != nil && !errors.Is(err, keel.KindUnavailable) {
			return
		}
	}
}

func itemKey(w, n int) string { return fmt.Sprintf("item/%d/%08d", w, n) }

// bump increments the counter at key.
func bump(ctx context.Context, s storage.Store, key string) error {
	return s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get(key)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		n, _ := strconv.Atoi(string(v))
		return tx.Put(key, []byte(strconv.Itoa(n+1)))
	})
}

func anyKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
