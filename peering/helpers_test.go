package peering_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// cluster is one in-process cluster of a test.
type cluster struct {
	svc   *peering.Service
	store storage.Store
	addr  string
}

// world is two clusters, "a" (dc1) and "b" (dc2), on one fake clock and
// one in-process network.
type world struct {
	clock *keel.FakeClock
	net   *peeringtest.Network
	a, b  *cluster
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newWorld returns a world whose clusters have a store each from open
// (everystore.Mem for a test of one store).
func newWorld(t testing.TB, open everystore.Open) *world {
	t.Helper()
	w := &world{clock: keel.NewFakeClock(t0), net: &peeringtest.Network{}}
	w.a = w.add(t, "dc1", "10.0.0.1:8300", open(t), nil)
	w.b = w.add(t, "dc2", "10.0.0.2:8300", open(t), nil)
	return w
}

// TestMain gives the tests on etcdstore one embedded etcd (see everystore).
func TestMain(m *testing.M) { everystore.Main(m) }

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

func (w *world) add(t testing.TB, dc, addr string, store storage.Store, authz keel.Authorizer) *cluster {
	t.Helper()
	t.Cleanup(func() { store.Close() })
	svc, err := peering.New(storage.Sub(store, "peering/"), w.net, &peering.Options{
		Datacenter: dc, Addresses: []string{addr}, Clock: w.clock, Logger: quiet(), Authorizer: authz,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.net.Register(addr, svc)
	return &cluster{svc: svc, store: store, addr: addr}
}

// peer generates a token on a for name "b" and establishes it on b under
// name "a".
func (w *world) peer(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	tok, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
	if err != nil {
		t.Fatalf("GenerateToken: %v", err)
	}
	if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
		t.Fatalf("Establish: %v", err)
	}
}

// step runs Step on both clusters at the clock's time.
func (w *world) step(t testing.TB) {
	t.Helper()
	for _, c := range []*cluster{w.a, w.b} {
		if _, err := c.svc.Step(context.Background(), w.clock.Now()); err != nil {
			t.Fatalf("Step: %v", err)
		}
	}
}

func read(t testing.TB, c *cluster, name string) *peering.Peering {
	t.Helper()
	p, _, err := c.svc.Get(context.Background(), name, peering.Query{})
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return p
}

func wantKind(t testing.TB, err error, k keel.Kind) {
	t.Helper()
	if got := keel.KindOf(err); got != k {
		t.Fatalf("error %v: kind %v, want %v", err, got, k)
	}
}

func wantState(t testing.TB, p *peering.Peering, s peering.State) {
	t.Helper()
	if p.State != s {
		t.Fatalf("peering %q: state %s, want %s", p.Name, p.State, s)
	}
}

// decodeToken returns the JSON object of a token.
func decodeToken(t testing.TB, tok string) map[string]any {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("token is not base64: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("token is not JSON: %v", err)
	}
	return m
}

func encodeToken(t testing.TB, m map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

var errBoom = errors.New("boom")
