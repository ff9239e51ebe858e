package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// TestLeaderTakesTurns: a second candidate waits while the first leads,
// and leads as soon as the first releases, well before the TTL would have
// ended the released term.
func TestLeaderTakesTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = time.Second
	newPair := func() (a, b *etcdstore.Leader) {
		o := &etcdstore.Options{Prefix: etcdtest.Prefix()}
		a = etcdstore.New(etcdtest.Client(t), o).Leader("worker", &etcdstore.LeaderOptions{TTL: ttl, ID: "a"})
		b = etcdstore.New(etcdtest.Client(t), o).Leader("worker", &etcdstore.LeaderOptions{TTL: ttl, ID: "b"})
		return a, b
	}
	// a keeps leading past its TTL: the term is renewed. (The wait is the
	// passage of etcd's real TTL that the test is about.) A renewal that a
	// loaded machine delays past the term's margin rightly loses the term:
	// the scenario is then made again on a new key, up to three times.
	var (
		a, b *etcdstore.Leader
		ta   leader.Term
	)
	for attempt := 1; ; attempt++ {
		a, b = newPair()
		var err error
		if ta, err = a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = b.Acquire(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire while another leads = %v, want the ctx's deadline", err)
		}
		kept := false
		select {
		case <-ta.Lost():
		case <-time.After(ttl + ttl/2):
			kept = true
		}
		if kept {
			break
		}
		if attempt == 3 {
			t.Fatal("a term was lost while its process lives, at the third attempt")
		}
		t.Logf("attempt %d: a's term was lost while its process lives (a renewal came too late?); again", attempt)
		ta.Release(ctx)
	}

	// handover releases a's term ta while b waits in Acquire, and returns
	// how long b took to lead after the Release.
	handover := func(ta leader.Term, b *etcdstore.Leader) time.Duration {
		t.Helper()
		got := make(chan leader.Term, 1)
		go func() {
			tb, err := b.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- tb
		}()
		// b's Acquire is under way or not yet: either way it must not
		// lead before the Release.
		start := time.Now()
		if err := ta.Release(ctx); err != nil {
			t.Fatal(err)
		}
		var d time.Duration
		select {
		case tb := <-got:
			d = time.Since(start)
			if tb != nil {
				tb.Release(ctx)
			}
		case <-time.After(keeltest.WaitBound):
			t.Fatalf("b did not lead within %s of a's Release", keeltest.WaitBound)
		}
		select {
		case <-ta.Lost():
		default:
			t.Error("a released term is not lost")
		}
		return d
	}
	// b leads because a released, not because a's term ran out: sooner
	// than the TTL. A loaded machine can delay b past it; the scenario is
	// then made again on a new key, up to three times.
	for attempt := 1; ; attempt++ {
		d := handover(ta, b)
		if d < ttl {
			t.Logf("b leads %s after a's Release (attempt %d)", d.Round(time.Millisecond), attempt)
			break
		}
		if attempt == 3 {
			t.Fatalf("b led %s after a's Release at the third attempt, not sooner than the %s TTL", d.Round(time.Millisecond), ttl)
		}
		t.Logf("attempt %d: b led %s after a's Release, not sooner than the %s TTL; again", attempt, d.Round(time.Millisecond), ttl)
		a, b = newPair()
		var err error
		if ta, err = a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderCrashHandsOver: when the leader's process dies (its client
// closes without releasing), its term is lost at once for it, and another
// leads after the session TTL.
func TestLeaderCrashHandsOver(t *testing.T) {
	t.Parallel()
	o := &etcdstore.Options{Prefix: etcdtest.Prefix()}
	ca, err := etcdtest.NewClient(etcdtest.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	a := etcdstore.New(ca, o).Leader("worker", &etcdstore.LeaderOptions{TTL: time.Second})
	b := etcdstore.New(etcdtest.Client(t), o).Leader("worker", &etcdstore.LeaderOptions{TTL: time.Second})
	ctx := context.Background()
	ta, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca.Close() // the crash
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, keeltest.WaitBound)
	defer cancel()
	tb, err := b.Acquire(tctx)
	if err != nil {
		t.Fatalf("b did not take over: %v", err)
	}
	defer tb.Release(ctx)
	t.Logf("b leads %v after a's crash", time.Since(start))
	select {
	case <-ta.Lost():
	default:
		t.Error("b leads while a's term is not lost")
	}
}

// countingRevoker records which manager revoked which lease.
type countingRevoker struct {
	mu  sync.Mutex
	by  map[string][]string // lease id -> names of the managers that revoked it
	all int
}

func (r *countingRevoker) revoker(name string) lease.Revoker {
	return lease.RevokerFunc(func(ctx context.Context, l lease.Lease) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.by[l.ID] = append(r.by[l.ID], name)
		r.all++
		return nil
	})
}

func (r *countingRevoker) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all
}

// TestLeaseManagersOneLeader: two lease managers, on two Stores (two
// processes) of one etcd, each with a Leader of the same election: every
// lease is revoked once, by the leader; stopping the leader's manager hands
// expiry to the other.
func TestLeaseManagersOneLeader(t *testing.T) {
	t.Parallel()
	prefix := etcdtest.Prefix()
	r := &countingRevoker{by: map[string][]string{}}
	managers := map[string]*lease.Manager{}
	issuers := map[string]*lease.Issuer{}
	for _, name := range []string{"a", "b"} {
		s := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
		m, err := lease.New(s, &lease.Options{Leader: s.Leader("lease", &etcdstore.LeaderOptions{TTL: time.Second, ID: name})})
		if err != nil {
			t.Fatal(err)
		}
		iss, err := m.Register(lease.Mount{Path: "m/", Revoker: r.revoker(name)})
		if err != nil {
			t.Fatal(err)
		}
		issuers[name] = iss
		m.Start()
		t.Cleanup(m.Stop)
		managers[name] = m
	}
	ctx := context.Background()
	issue := func(n int) {
		for i := range n {
			if _, err := issuers["a"].Issue(ctx, lease.IssueRequest{Path: fmt.Sprintf("m/p%d", i), TTL: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		managers["b"].Wake()
	}
	check := func(want int) {
		t.Helper()
		keeltest.Until(t, fmt.Sprintf("%d revocations", want), func() bool { return r.count() >= want })
		r.mu.Lock()
		defer r.mu.Unlock()
		for id, names := range r.by {
			if len(names) != 1 {
				t.Errorf("lease %s revoked by %q, want once", id, names)
			}
		}
	}
	issue(5)
	check(5)
	r.mu.Lock()
	var first string
	for _, names := range r.by {
		if first == "" {
			first = names[0]
		}
		if names[0] != first {
			t.Errorf("leases revoked by both managers: %v", r.by)
			break
		}
	}
	r.by = map[string][]string{}
	r.all = 0
	r.mu.Unlock()

	// The leader stops (Stop releases its term): the other takes over.
	managers[first].Stop()
	issue(3)
	check(3)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, names := range r.by {
		if names[0] == first {
			t.Errorf("lease %s revoked by the stopped manager %s", id, first)
		}
	}
}
