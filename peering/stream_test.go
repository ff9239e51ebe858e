package peering_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/peering"
)

func TestHeartbeatCarriesExportedServices(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.peer(t)
		if err := w.a.svc.PutExportedServices(ctx, "b", []string{"web", "api", "web"}); err != nil {
			t.Fatal(err)
		}
		if err := w.b.svc.PutExportedServices(ctx, "a", []string{"db"}); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Second)
		w.step(t)
		a, b := read(t, w.a, "b"), read(t, w.b, "a")
		if !slices.Equal(a.StreamStatus.ExportedServices, []string{"api", "web"}) || !slices.Equal(b.StreamStatus.ImportedServices, []string{"api", "web"}) {
			t.Errorf("a exports %v, b imports %v", a.StreamStatus.ExportedServices, b.StreamStatus.ImportedServices)
		}
		if !slices.Equal(a.StreamStatus.ImportedServices, []string{"db"}) {
			t.Errorf("a imports %v", a.StreamStatus.ImportedServices)
		}
		now := w.clock.Now()
		if !a.StreamStatus.LastHeartbeat.Equal(now) || !b.StreamStatus.LastSend.Equal(now) || !b.StreamStatus.LastReceive.Equal(now) {
			t.Errorf("times a %+v b %+v", a.StreamStatus, b.StreamStatus)
		}
	})
}

func TestPutExportedServicesRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		wantKind(t, w.a.svc.PutExportedServices(ctx, "nobody", []string{"x"}), keel.KindNotFound)
		w.peer(t)
		wantKind(t, w.a.svc.PutExportedServices(ctx, "b", []string{""}), keel.KindInvalid)
		if err := w.a.svc.Delete(ctx, "b", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, w.a.svc.PutExportedServices(ctx, "b", []string{"x"}), keel.KindConflict)
	})
}

func TestStepSchedulesNextHeartbeat(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		w.peer(t)
		next, err := w.b.svc.Step(context.Background(), w.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(defaultHeartbeatInterval); !next.Equal(want) {
			t.Fatalf("next %v, want %v", next, want)
		}
	})
}

func TestFailingWhenHeartbeatsStop(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		w.peer(t)
		w.net.SetDown(w.a.addr, true)
		for range 8 {
			w.clock.Advance(defaultHeartbeatInterval)
			w.step(t)
		}
		wantState(t, read(t, w.a, "b"), peering.StateFailing)
		wantState(t, read(t, w.b, "a"), peering.StateFailing)
		w.net.SetDown(w.a.addr, false)
		w.clock.Advance(defaultHeartbeatInterval)
		w.step(t)
		wantState(t, read(t, w.a, "b"), peering.StateActive)
		wantState(t, read(t, w.b, "a"), peering.StateActive)
	})
}

func TestDeleteByAcceptor(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.peer(t)
		w.b.svc.PutExportedServices(ctx, "a", []string{"db"})
		w.step(t)
		if err := w.a.svc.Delete(ctx, "b", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
		p := read(t, w.a, "b")
		wantState(t, p, peering.StateTerminated)
		if !p.DeletedAt.Equal(t0) {
			t.Fatalf("DeletedAt %v", p.DeletedAt)
		}
		if _, err := w.a.svc.Step(ctx, w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		_, _, err := w.a.svc.Get(ctx, "b", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
		b := read(t, w.b, "a")
		wantState(t, b, peering.StateTerminated)
		if !b.DeletedAt.IsZero() || b.StreamStatus.ImportedServices != nil {
			t.Fatalf("the other side %+v", b)
		}
		// The other side keeps its record until it is deleted there.
		w.clock.Advance(time.Hour)
		w.step(t)
		read(t, w.b, "a")
		if err := w.b.svc.Delete(ctx, "a", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
		w.step(t)
		_, _, err = w.b.svc.Get(ctx, "a", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
	})
}

func TestDeleteByDialer(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.peer(t)
		if err := w.b.svc.Delete(ctx, "a", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
		w.step(t)
		wantState(t, read(t, w.a, "b"), peering.StateTerminated)
		_, _, err := w.b.svc.Get(ctx, "a", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
	})
}

func TestDeleteWhilePeerUnreachable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.peer(t)
		w.net.SetDown(w.b.addr, true)
		w.a.svc.Delete(ctx, "b", peering.DeleteRequest{})
		next, err := w.a.svc.Step(ctx, w.clock.Now())
		if err != nil || next.IsZero() {
			t.Fatalf("Step: next %v, %v", next, err)
		}
		read(t, w.a, "b") // still there: telling the peer is retried
		w.clock.Advance(defaultHeartbeatTimeout)
		w.a.svc.Step(ctx, w.clock.Now())
		_, _, err = w.a.svc.Get(ctx, "b", peering.Query{})
		wantKind(t, err, keel.KindNotFound)
		// b learns at its next heartbeat: a answers that the peering is gone.
		w.net.SetDown(w.b.addr, false)
		w.b.svc.Step(ctx, w.clock.Now())
		wantState(t, read(t, w.b, "a"), peering.StateTerminated)
	})
}

func TestDeleteMissingSucceeds(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		if err := w.a.svc.Delete(context.Background(), "nobody", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDeleteInitialPeering(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		tok, _ := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		w.a.svc.Delete(ctx, "b", peering.DeleteRequest{})
		_, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		wantKind(t, err, keel.KindConflict)
		err = w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok})
		wantKind(t, err, keel.KindInvalid)
		w.step(t)
		if _, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"}); err != nil {
			t.Fatalf("after removal the name is free: %v", err)
		}
	})
}

func TestStreamSecretChecked(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		w.peer(t)
		b := read(t, w.b, "a")
		_, err := w.a.svc.HandleHeartbeat(ctx, &peering.HeartbeatRequest{PeerID: b.PeerID, StreamSecret: "forged"})
		wantKind(t, err, keel.KindForbidden)
		wantKind(t, w.a.svc.HandleTerminate(ctx, &peering.TerminateRequest{PeerID: b.PeerID, StreamSecret: "forged"}), keel.KindForbidden)
		wantState(t, read(t, w.a, "b"), peering.StateActive)
	})
}

func TestWorkerStartStop(t *testing.T) {
	w := newWorld(t, everystore.Mem)
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
	defer cancel()
	w.peer(t)
	w.a.svc.PutExportedServices(ctx, "b", []string{"web"})
	_, idx, _ := w.b.svc.Get(ctx, "a", peering.Query{})
	w.b.svc.Start()
	w.b.svc.Start() // idempotent
	defer w.b.svc.Stop()
	if err := w.clock.BlockUntil(ctx, 1); err != nil { // the worker waits
		t.Fatal(err)
	}
	w.clock.Advance(defaultHeartbeatInterval)
	p, _, err := w.b.svc.Get(ctx, "a", peering.Query{MinIndex: idx})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.StreamStatus.ImportedServices, []string{"web"}) {
		t.Fatalf("imported %v", p.StreamStatus.ImportedServices)
	}
	w.b.svc.Stop()
	w.b.svc.Stop()
}

// The defaults of Options.HeartbeatInterval and Options.HeartbeatTimeout,
// as documented.
const (
	defaultHeartbeatInterval = 15 * time.Second
	defaultHeartbeatTimeout  = 2 * time.Minute
)
