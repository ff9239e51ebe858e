package lease

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// txCounter counts the transactions run on the store it wraps.
type txCounter struct {
	storage.Store
	views, updates atomic.Int32
}

func (c *txCounter) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	c.views.Add(1)
	return c.Store.View(ctx, fn)
}

func (c *txCounter) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// TestRenewWithoutEngineIsOneTransaction: a renewal whose engine is neither
// Renewer nor Refresher reads, checks and stores the lease in one Update
// (on a durable store, a read transaction less per renewal); its refusals
// are the same as with an engine, and store nothing.
func TestRenewWithoutEngineIsOneTransaction(t *testing.T) {
	store := &txCounter{Store: memstore.New(nil)}
	clock := keel.NewFakeClock(t0)
	m := mustNew(t, store, &Options{Clock: clock})
	if err := m.register("ldap/", RevokerFunc(func(context.Context, Lease) error { return nil }), nil); err != nil {
		t.Fatal(err)
	}
	l, err := m.issue(context.Background(), IssueRequest{Path: "ldap/creds/app", TTL: time.Hour, Renewable: true})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := m.issue(context.Background(), IssueRequest{Path: "ldap/creds/app", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	store.views.Store(0)
	store.updates.Store(0)
	r, err := m.Renew(context.Background(), l.ID, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if v, u := store.views.Load(), store.updates.Load(); v != 0 || u != 1 {
		t.Fatalf("a renewal ran %d Views and %d Updates, want 0 and 1", v, u)
	}
	if want := t0.Add(time.Minute + 2*time.Hour); !r.Lease.ExpireTime.Equal(want) || r.TTL != 2*time.Hour || r.Capped {
		t.Fatalf("renewal %+v, want expiry %s, TTL 2h, not capped", r, want)
	}
	got, err := m.Get(context.Background(), l.ID)
	if err != nil || !got.ExpireTime.Equal(r.Lease.ExpireTime) || !got.LastRenewalTime.Equal(t0.Add(time.Minute)) {
		t.Fatalf("stored lease %+v, %v; want the renewal's", got, err)
	}
	for _, tc := range []struct {
		id   string
		kind keel.Kind
	}{
		{fixed.ID, keel.KindInvalid},               // not renewable
		{"ldap/creds/app/nope", keel.KindNotFound}, // unknown
	} {
		before, _ := m.Get(context.Background(), tc.id)
		if _, err := m.Renew(context.Background(), tc.id, time.Hour); !errors.Is(err, tc.kind) {
			t.Errorf("Renew(%q): %v, want kind %v", tc.id, err, tc.kind)
		}
		if after, _ := m.Get(context.Background(), tc.id); !reflect.DeepEqual(after, before) {
			t.Errorf("a refused renewal changed the lease: %+v, was %+v", after, before)
		}
	}
}
