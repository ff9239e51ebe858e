package lease

import (
	"context"
	"github.com/keelhq/keel/internal/everystore"
	"testing"
	"time"
)

func TestWorkerPlansAndWakesForEarlierLeases(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	calls := make(chan Lease, 10)
	e.rev.calls = calls
	ctx := context.Background()
	first := e.issue(t, IssueRequest{TTL: time.Hour})
	<-e.m.wake // the worker does not run: Issue woke it for nothing
	e.m.Start()
	if err := e.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := e.m.worker.Planned(); !got.Equal(first.ExpireTime) {
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
	if !e.m.worker.Planned().IsZero() {
		t.Error("a stopped worker still plans a step")
	}
}
