package etcdstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// The lease manager's batches fit etcd's limits: 300 leases fall due and
// one Step revokes every one, a prefix revocation and a tidy of that many
// succeed too.
func TestLeaseManagerBatchesFitEtcd(t *testing.T) {
	ctx := context.Background()
	store := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: etcdtest.Prefix()})
	clock := keel.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	m, err := lease.New(store, &lease.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var revoked atomic.Int64 // the worker calls revokers side by side
	app, err := m.Register(lease.Mount{Path: "app/", Revoker: lease.RevokerFunc(func(context.Context, lease.Lease) error { revoked.Add(1); return nil })})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(n int, path string) {
		for range n {
			if _, err := app.Issue(ctx, lease.IssueRequest{Path: path, TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	issue(300, "app/creds/a")
	clock.Advance(2 * time.Minute)
	if _, err := m.Step(ctx, clock.Now()); err != nil {
		t.Fatalf("Step over etcd: %v", err)
	}
	if revoked.Load() != 300 {
		t.Fatalf("revoked %d leases, want 300", revoked.Load())
	}

	issue(300, "app/creds/b")
	if _, err := m.Tidy(ctx); err != nil {
		t.Fatalf("Tidy over etcd: %v", err)
	}
	if err := m.RevokePrefix(ctx, "app/creds/b", true); err != nil {
		t.Fatalf("RevokePrefix over etcd: %v", err)
	}
	if revoked.Load() != 600 {
		t.Fatalf("revoked %d leases, want 600", revoked.Load())
	}
	if ids, err := m.List(ctx, "app/creds/b/", keel.ListRequest{}); err != nil || len(ids.Items) != 0 {
		t.Fatalf("leases left: %d, %v", len(ids.Items), err)
	}
}
