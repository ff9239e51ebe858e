package peering_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
)

func TestIndexesAreReal(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		first := read(t, w.a, "b")
		if first.CreateIndex == 0 || first.CreateIndex != first.ModifyIndex {
			t.Fatalf("new peering indexes %d %d", first.CreateIndex, first.ModifyIndex)
		}
		w.a.svc.PutExportedServices(ctx, "b", []string{"x"})
		second := read(t, w.a, "b")
		if second.CreateIndex != first.CreateIndex || second.ModifyIndex <= first.ModifyIndex {
			t.Fatalf("after a change %d %d", second.CreateIndex, second.ModifyIndex)
		}
		l, err := w.a.svc.List(ctx, peering.Query{})
		if err != nil || l.Index < second.ModifyIndex {
			t.Fatalf("list index %v, %v", l, err)
		}
	})
}

func TestIndexNeverZero(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		l, err := w.a.svc.List(context.Background(), peering.Query{})
		if err != nil || l.Index == 0 || l.Peerings == nil {
			t.Fatalf("empty list %+v, %v", l, err)
		}
		_, idx, err := w.a.svc.Get(context.Background(), "none", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
		if idx == 0 {
			t.Fatal("index 0 for a missing peering")
		}
	})
}

func TestBlockingReadReturnsOnChange(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		_, idx, _ := w.a.svc.Get(ctx, "b", peering.Query{})
		got := make(chan *peering.Peering, 1)
		go func() {
			p, _, _ := w.a.svc.Get(ctx, "b", peering.Query{MinIndex: idx, WaitTime: time.Minute})
			got <- p
		}()
		if err := w.clock.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		w.a.svc.PutExportedServices(ctx, "b", []string{"web"})
		if p := <-got; p.ModifyIndex <= idx {
			t.Fatalf("returned index %d, want above %d", p.ModifyIndex, idx)
		}
	})
}

// TestBlockingReadSeesAnotherServer: a blocking read through one server
// of a cluster returns within a second of a change made through another
// server on the same store (on etcd, a Store of another client, as another
// process): the store's watch wakes it, not the end of its wait.
func TestBlockingReadSeesAnotherServer(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		other, err := peering.New(storage.Sub(everystore.Another(t, w.a.store), "peering/"), w.net, &peering.Options{
			Datacenter: "dc1", Addresses: []string{"10.0.0.3:8300"}, Clock: w.clock, Logger: quiet(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"}); err != nil {
			t.Fatal(err)
		}
		_, idx, err := other.Get(ctx, "b", peering.Query{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan uint64, 1)
		go func() {
			_, i, _ := other.Get(ctx, "b", peering.Query{MinIndex: idx, WaitTime: time.Minute})
			got <- i
		}()
		if err := w.clock.BlockUntil(ctx, 1); err != nil { // the read waits
			t.Fatal(err)
		}
		if err := w.a.svc.PutExportedServices(ctx, "b", []string{"web"}); err != nil {
			t.Fatal(err)
		}
		select {
		case i := <-got:
			if i <= idx {
				t.Fatalf("returned index %d, want above %d", i, idx)
			}
		case <-time.After(keeltest.WaitBound):
			// Its WaitTime cannot pass: the clock is fake.
			t.Fatalf("the blocking read on the other server did not return within %v of the change", keeltest.WaitBound)
		}
	})
}

func TestBlockingReadEndsAtWait(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		advance time.Duration
	}{
		{"given wait", time.Minute, time.Minute},
		{"default 5 minutes", 0, peering.DefaultWait},
		{"at most 10 minutes", time.Hour, peering.MaxWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, everystore.Mem)
			ctx := context.Background()
			l, _ := w.a.svc.List(ctx, peering.Query{})
			done := make(chan *peering.List, 1)
			go func() {
				l, _ := w.a.svc.List(ctx, peering.Query{MinIndex: l.Index, WaitTime: tt.wait})
				done <- l
			}()
			if err := w.clock.BlockUntil(ctx, 1); err != nil {
				t.Fatal(err)
			}
			w.clock.Advance(tt.advance - time.Nanosecond)
			select {
			case <-done:
				t.Fatal("returned before the wait ended")
			default:
			}
			w.clock.Advance(time.Nanosecond)
			if got := <-done; got.Index != l.Index {
				t.Fatalf("index %d, want %d", got.Index, l.Index)
			}
		})
	}
}

func TestBlockingReadCanceled(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx, cancel := context.WithCancel(context.Background())
		_, idx, _ := w.a.svc.Get(ctx, "b", peering.Query{})
		errc := make(chan error, 1)
		go func() {
			_, _, err := w.a.svc.Get(ctx, "b", peering.Query{MinIndex: idx})
			errc <- err
		}()
		w.clock.BlockUntil(ctx, 1)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestQueryValidation(t *testing.T) {
	w := newWorld(t, everystore.Mem)
	_, err := w.a.svc.List(context.Background(), peering.Query{Partition: "other"})
	wantKind(t, err, keel.KindInvalid)
	_, _, err = w.a.svc.Get(context.Background(), "b", peering.Query{WaitTime: -1})
	wantKind(t, err, keel.KindInvalid)
	if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "WaitTime" {
		t.Fatalf("field errors %v, want WaitTime", fe)
	}
	err = w.a.svc.Delete(context.Background(), "b", peering.DeleteRequest{Partition: "other"})
	wantKind(t, err, keel.KindInvalid)
	if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Partition" {
		t.Fatalf("field errors %v, want Partition", fe)
	}
}

func TestRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"reader": {{Path: "peering/*", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
			"web":    {{Path: "peering/web", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, open)
		c := w.add(t, "dc9", "10.0.0.9:8300", open(t), authz)
		root := keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
		reader := keel.WithPrincipal(context.Background(), keel.Principal{ID: "r", Policies: []string{"reader"}})
		web := keel.WithPrincipal(context.Background(), keel.Principal{ID: "w", Policies: []string{"web"}})
		for _, n := range []string{"web", "db"} {
			if _, err := c.svc.GenerateToken(root, peering.TokenRequest{PeerName: n}); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name string
			call func() error
			want keel.Kind
		}{
			{"token needs peering:write", func() error { _, err := c.svc.GenerateToken(reader, peering.TokenRequest{PeerName: "x"}); return err }, keel.KindForbidden},
			{"establish needs peering:write", func() error { return c.svc.Establish(reader, peering.EstablishRequest{PeerName: "x"}) }, keel.KindForbidden},
			{"delete needs peering:write", func() error { return c.svc.Delete(reader, "web", peering.DeleteRequest{}) }, keel.KindForbidden},
			{"export needs peering:write", func() error { return c.svc.PutExportedServices(reader, "web", nil) }, keel.KindForbidden},
			{"read needs peering:read", func() error { _, _, err := c.svc.Get(web, "db", peering.Query{}); return err }, keel.KindForbidden},
			{"read with peering:read", func() error { _, _, err := c.svc.Get(web, "web", peering.Query{}); return err }, keel.KindNone},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { wantKind(t, tt.call(), tt.want) })
		}
		t.Run("list filtered", func(t *testing.T) {
			l, err := c.svc.List(web, peering.Query{})
			if err != nil || len(l.Peerings) != 1 || l.Peerings[0].Name != "web" || !l.Filtered {
				t.Fatalf("list %+v, %v", l, err)
			}
		})
		t.Run("list with no peering:read anywhere", func(t *testing.T) {
			nobody := keel.WithPrincipal(context.Background(), keel.Principal{ID: "n"})
			l, err := c.svc.List(nobody, peering.Query{})
			wantKind(t, err, keel.KindForbidden)
			if l != nil {
				t.Fatalf("list %+v with the error", l)
			}
		})
		t.Run("list not filtered", func(t *testing.T) {
			l, err := c.svc.List(reader, peering.Query{})
			if err != nil || len(l.Peerings) != 2 || l.Filtered {
				t.Fatalf("list %+v, %v", l, err)
			}
		})
	})
}

func TestFaultsLeaveNothingHalfDone(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		fs := faultstore.New(open(t))
		c := w.add(t, "dc3", "10.0.0.3:8300", fs, nil)
		fs.Rerun(true)
		fs.Fail(faultstore.OpCommit, "", 1, errBoom)
		_, err := c.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		if !errors.Is(err, errBoom) {
			t.Fatalf("error %v", err)
		}
		_, _, err = c.svc.Get(ctx, "b", peering.Query{})
		wantKind(t, err, keel.KindNotFound)

		tok, err := c.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		if err != nil {
			t.Fatal(err)
		}
		// The acceptor's store fails: the secret stays unused.
		fs.Fail(faultstore.OpPut, "peering/name/", 1, errBoom)
		err = w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "c", PeeringToken: tok})
		if !errors.Is(err, errBoom) {
			t.Fatalf("error %v", err)
		}
		wantState(t, read(t, c, "b"), peering.StateInitial)
		if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "c", PeeringToken: tok}); err != nil {
			t.Fatal(err)
		}
		// A failing store makes Step fail and change nothing.
		fs.Fail(faultstore.OpScan, "", 1, errBoom)
		if _, err := c.svc.Step(ctx, w.clock.Now()); !errors.Is(err, errBoom) {
			t.Fatalf("Step: %v", err)
		}
		c.svc.Delete(ctx, "b", peering.DeleteRequest{})
		fs.Fail(faultstore.OpDelete, "", 1, errBoom)
		if _, err := c.svc.Step(ctx, w.clock.Now()); !errors.Is(err, errBoom) {
			t.Fatalf("Step: %v", err)
		}
		read(t, c, "b")
		if _, err := c.svc.Step(ctx, w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		_, _, err = c.svc.Get(ctx, "b", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
	})
}
