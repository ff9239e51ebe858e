package leader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/leader"
)

// fakeLeader grants terms that the test ends by closing their lost channel.
type fakeLeader struct {
	mu       sync.Mutex
	events   []string
	terms    chan *fakeTerm // a term granted to Acquire
	failures int            // Acquire fails this many times first
}

type fakeTerm struct {
	l    *fakeLeader
	lost chan struct{}
}

func (l *fakeLeader) log(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *fakeLeader) Acquire(ctx context.Context) (leader.Term, error) {
	l.mu.Lock()
	if l.failures > 0 {
		l.failures--
		l.mu.Unlock()
		return nil, errors.New("unavailable")
	}
	l.mu.Unlock()
	t := &fakeTerm{l: l, lost: make(chan struct{})}
	select {
	case l.terms <- t:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.log("acquire")
	return t, nil
}

func (t *fakeTerm) Lost() <-chan struct{} { return t.lost }
func (t *fakeTerm) Release(context.Context) error {
	t.l.log("release")
	return nil
}

// TestRunStopsWorkBeforeRelease: work ends, through its ctx, when the term
// is lost, and before Release; Run then acquires a new term; Acquire errors
// are reported and retried.
func TestRunStopsWorkBeforeRelease(t *testing.T) {
	l := &fakeLeader{terms: make(chan *fakeTerm), failures: 1}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		leader.Run(ctx, l, time.Millisecond, func(err error) { errs = append(errs, err) }, func(ctx context.Context) {
			l.log("start")
			started <- struct{}{}
			<-ctx.Done()
			l.log("stop")
		})
	}()
	t1 := <-l.terms
	<-started
	close(t1.lost)
	t2 := <-l.terms
	<-started
	cancel()
	<-done
	_ = t2
	want := []string{"acquire", "start", "stop", "release", "acquire", "start", "stop", "release"}
	l.mu.Lock()
	got := l.events
	l.mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if len(errs) != 1 {
		t.Errorf("onError got %v, want the one Acquire failure", errs)
	}
}

// TestAlways: the term of Always is never lost; Run calls work once until
// ctx ends.
func TestAlways(t *testing.T) {
	term, err := leader.Always.Acquire(context.Background())
	if err != nil || term.Lost() != nil {
		t.Fatalf("Always.Acquire = %v, %v", term, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	leader.Run(ctx, leader.Always, time.Second, nil, func(ctx context.Context) {
		calls++
		cancel()
		<-ctx.Done()
	})
	if calls != 1 {
		t.Errorf("work called %d times, want 1", calls)
	}
}
