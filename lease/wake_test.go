package lease

import (
	"context"
	"testing"
	"time"
)

func TestWakeFor(t *testing.T) {
	e := newEnv(t, nil, nil)
	pending := func() bool {
		select {
		case <-e.m.wake:
			return true
		default:
			return false
		}
	}
	pending()
	// Nothing planned (not running, stepping, or no lease): always wake.
	e.m.wakeFor(t0.Add(time.Hour))
	if !pending() {
		t.Error("no wake-up while nothing is planned")
	}
	e.m.planned.Store(t0.Add(time.Hour).UnixNano())
	e.m.wakeFor(t0.Add(time.Hour))
	e.m.wakeFor(t0.Add(2 * time.Hour))
	if pending() {
		t.Error("woken for a lease due no earlier than the planned step")
	}
	e.m.wakeFor(t0.Add(time.Minute))
	if !pending() {
		t.Error("not woken for a lease due before the planned step")
	}
}

func TestWorkerPlansAndWakesForEarlierLeases(t *testing.T) {
	e := newEnv(t, nil, nil)
	calls := make(chan Lease, 10)
	e.rev.calls = calls
	ctx := context.Background()
	first := e.issue(t, IssueRequest{TTL: time.Hour})
	<-e.m.wake // the worker does not run: Issue woke it for nothing
	e.m.Start()
	if err := e.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := time.Unix(0, e.m.planned.Load()); !got.Equal(first.ExpireTime) {
		t.Fatalf("planned %v, want the first lease's expiry %v", got, first.ExpireTime)
	}
	// A lease due later does not wake the worker; it is revoked in its
	// turn all the same.
	later := e.issue(t, IssueRequest{TTL: 2 * time.Hour})
	select {
	case <-e.m.wake:
		t.Fatal("a lease due after the planned step woke the worker")
	default:
	}
	e.m.Stop()
	e.clock.Advance(2 * time.Hour)
	e.m.Start()
	got := map[string]bool{(<-calls).ID: true, (<-calls).ID: true}
	if !got[first.ID] || !got[later.ID] {
		t.Errorf("revoked %v, want both leases", got)
	}
	e.m.Stop()
	if e.m.planned.Load() != 0 {
		t.Error("a stopped worker still plans a step")
	}
}
