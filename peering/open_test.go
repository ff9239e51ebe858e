package peering_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestOpenRunsTheWorkerUntilClose: a Service of Open keeps its keys under
// "peering/" of the store it is given and runs its worker (the dialer's
// heartbeats reach the acceptor on the clock) until Close; a second Close
// is fine.
func TestOpenRunsTheWorkerUntilClose(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
		defer cancel()
		clock := keel.NewFakeClock(t0)
		net := &peeringtest.Network{}
		// The acceptor runs no worker: only the dialer's sends heartbeats.
		a, err := peering.New(storage.Sub(open(t), "peering/"), net, &peering.Options{
			Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}, Clock: clock, Logger: quiet(),
		})
		if err != nil {
			t.Fatal(err)
		}
		net.Register("10.0.0.1:8300", a)
		store := open(t)
		b, err := peering.Open(ctx, store, net, &peering.Options{
			Datacenter: "dc2", Addresses: []string{"10.0.0.2:8300"}, Clock: clock, Logger: quiet(),
			Authorizer: keel.AllowAll{},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		net.Register("10.0.0.2:8300", b)

		tok, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
			t.Fatal(err)
		}
		if err := clock.BlockUntil(ctx, 1); err != nil { // the worker waits for the next heartbeat
			t.Fatalf("the worker of Open does not sleep on the clock: %v", err)
		}
		_, idx, err := a.Get(ctx, "b", peering.Query{})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(defaultHeartbeatInterval)
		p, _, err := a.Get(ctx, "b", peering.Query{MinIndex: idx})
		if err != nil {
			t.Fatal(err)
		}
		beat := t0.Add(defaultHeartbeatInterval)
		if !p.StreamStatus.LastHeartbeat.Equal(beat) {
			t.Fatalf("last heartbeat %v, want %v", p.StreamStatus.LastHeartbeat, beat)
		}

		keys := slices.Sorted(maps.Keys(storagetest.Dump(t, store)))
		if len(keys) == 0 {
			t.Fatal("nothing stored")
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "peering/") {
				t.Errorf("key %q is outside peering/", k)
			}
		}

		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if n := clock.Timers(); n != 0 {
			t.Fatalf("%d timers wait after Close", n)
		}
		clock.Advance(defaultHeartbeatInterval)
		if p := read(t, &cluster{svc: a}, "b"); !p.StreamStatus.LastHeartbeat.Equal(beat) {
			t.Fatalf("a heartbeat at %v after Close", p.StreamStatus.LastHeartbeat)
		}
		// The Service still answers.
		wantState(t, read(t, &cluster{svc: b}, "a"), peering.StateActive)
	})
}

// TestCloseStopsAStartedWorker: Close stops the worker of a Service made
// with New and started with Start.
func TestCloseStopsAStartedWorker(t *testing.T) {
	w := newWorld(t, everystore.Mem)
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
	defer cancel()
	w.peer(t)
	w.b.svc.Start()
	if err := w.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.b.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.clock.Timers(); n != 0 {
		t.Fatalf("%d timers wait after Close", n)
	}
}

// TestOpenRefusesMissingFields: a nil store, transport or Authorizer is
// refused with keel.KindInvalid naming the field, and nothing is written.
func TestOpenRefusesMissingFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		net := &peeringtest.Network{}
		allow := &peering.Options{Authorizer: keel.AllowAll{}}
		tests := []struct {
			name      string
			store     storage.Store
			transport peering.Transport
			opts      *peering.Options
			want      []string
		}{
			{"no store", nil, net, allow, []string{"Store"}},
			{"no transport", store, nil, allow, []string{"Transport"}},
			{"no authorizer", store, net, &peering.Options{Datacenter: "dc1"}, []string{"Authorizer"}},
			{"no options", store, net, nil, []string{"Authorizer"}},
			{"nothing", nil, nil, nil, []string{"Store", "Transport", "Authorizer"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				svc, err := peering.Open(context.Background(), tt.store, tt.transport, tt.opts)
				if svc != nil {
					svc.Close()
				}
				if svc != nil || keel.KindOf(err) != keel.KindInvalid {
					t.Fatalf("Open = %v, %v; want an error of kind invalid", svc, err)
				}
				var fields []string
				for _, fe := range keel.FieldErrors(err) {
					fields = append(fields, fe.Field)
				}
				if !slices.Equal(fields, tt.want) {
					t.Fatalf("fields %v, want %v (%v)", fields, tt.want, err)
				}
				if dump := storagetest.Dump(t, store); len(dump) != 0 {
					t.Fatalf("a refused Open wrote %v", slices.Sorted(maps.Keys(dump)))
				}
			})
		}
	})
}

// TestNewRefusesWhatItNeeds: New refuses a nil store, a nil transport, and
// a part of a store a root gave to another kind, naming the field.
func TestNewRefusesWhatItNeeds(t *testing.T) {
	fields := func(err error) (out []string) {
		for _, fe := range keel.FieldErrors(err) {
			out = append(out, fe.Field)
		}
		return out
	}
	if _, err := peering.New(nil, nil, nil); keel.KindOf(err) != keel.KindInvalid || !slices.Equal(fields(err), []string{"Store", "Transport"}) {
		t.Errorf("New(nil, nil): %v, want Invalid naming Store and Transport", err)
	}
	root := memstore.New(nil)
	defer root.Close()
	if err := storage.Claim(storage.Sub(root, "kv/"), "kv"); err != nil {
		t.Fatal(err)
	}
	if _, err := peering.New(storage.Sub(root, "kv/x/"), &peeringtest.Network{}, nil); !slices.Equal(fields(err), []string{"Store"}) {
		t.Errorf("New inside kv's part: %v, want Invalid naming Store", err)
	}
}
