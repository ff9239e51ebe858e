package lease

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/oprecord"
)

func TestObserverIsToldOfLeaseOperations(t *testing.T) {
	rec := &oprecord.Recorder{}
	e := newEnv(t, everystore.Mem, &Options{Observer: rec}, nil)
	ctx := context.Background()
	a := e.issue(t, IssueRequest{TTL: time.Minute, Renewable: true})
	b := e.issue(t, IssueRequest{TTL: time.Minute})
	if _, err := e.m.Renew(ctx, a.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Revoke(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Get(ctx, a.ID); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("get of a revoked lease: %v", err)
	}
	e.clock.Advance(2 * time.Minute)
	if _, err := e.m.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range rec.Ended() {
		got = append(got, fmt.Sprintf("%s %s %s", op.Name, op.Resource, keel.KindOf(op.Err)))
	}
	want := []string{
		fmt.Sprintf("lease.Renew %s %s", a.ID, keel.KindNone),
		fmt.Sprintf("lease.Revoke %s %s", a.ID, keel.KindNone),
		fmt.Sprintf("lease.Get %s %s", a.ID, keel.KindNotFound),
		fmt.Sprintf("lease.Expire %s %s", b.ID, keel.KindNone),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("operations:\n%q\nwant\n%q", got, want)
	}
	renew := rec.Named("lease.Renew")[0]
	if r, ok := renew.Output.(Renewal); !ok || r.TTL != time.Hour {
		t.Errorf("Renew's Output = %#v, want the Renewal", renew.Output)
	}
	if in, ok := renew.Input.(renewInput); !ok || in.Increment != time.Hour {
		t.Errorf("Renew's Input = %#v, want the increment", renew.Input)
	}
}

func TestRefusedRenewalAndExpiryChangeNothing(t *testing.T) {
	rec := &oprecord.Recorder{}
	e := newEnv(t, everystore.Mem, &Options{Observer: rec}, nil)
	ctx := context.Background()
	l := e.issue(t, IssueRequest{TTL: time.Minute, Renewable: true})
	down := fmt.Errorf("audit device down: %w", keel.KindUnavailable)
	rec.Refuse(down)
	if _, err := e.m.Renew(ctx, l.ID, time.Hour); !errors.Is(err, down) {
		t.Fatalf("refused renewal: %v, want the refusal", err)
	}
	e.clock.Advance(2 * time.Minute)
	if _, err := e.m.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	got, ok := e.get(t, l.ID)
	if !ok {
		t.Fatal("the lease is gone though its revocation was refused")
	}
	if !got.ExpireTime.Equal(l.ExpireTime) || got.Attempts != 0 {
		t.Errorf("after the refusals: expire %v attempts %d; want %v and 0 attempts", got.ExpireTime, got.Attempts, l.ExpireTime)
	}
	if n := len(e.rev.ids()); n != 0 {
		t.Errorf("the revoker was called %d times", n)
	}
}

func TestCountCountsLiveIrrevocableAndDue(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{MaxAttempts: 1}, nil)
	ctx := context.Background()
	count := func() Counts {
		t.Helper()
		c, err := e.m.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := count(); c != (Counts{}) {
		t.Fatalf("empty store: %+v", c)
	}
	e.issue(t, IssueRequest{TTL: time.Minute})
	e.issue(t, IssueRequest{TTL: time.Minute})
	e.issue(t, IssueRequest{TTL: time.Hour})
	if c := count(); c != (Counts{Live: 3}) {
		t.Fatalf("three leases, none due: %+v", c)
	}
	held := e.m.heldHere.Load()
	e.m.heldHere.Store(true)
	e.clock.Advance(time.Minute)
	if c := count(); c != (Counts{Live: 3, Due: 2}) {
		t.Fatalf("two due at their instant: %+v", c)
	}
	e.m.heldHere.Store(held)
	e.rev.setFail(func(Lease) error { return Permanent(errors.New("gone wrong")) })
	if _, err := e.m.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if c := count(); c.Live != 3 || c.Irrevocable != 2 {
		t.Fatalf("two irrevocable after one failed attempt each: %+v", c)
	}
	e.rev.setFail(nil)
	e.clock.Advance(25 * time.Hour)
	if _, err := e.m.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if c := count(); c != (Counts{}) {
		t.Fatalf("all revoked: %+v", c)
	}
}
