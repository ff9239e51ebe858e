package peering_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

// recorder is a Transport that keeps the errors the peer answered the
// worker's messages with (Step logs them and returns none).
type recorder struct {
	peering.Transport
	errs []error
}

func (r *recorder) Heartbeat(ctx context.Context, addrs []string, req *peering.HeartbeatRequest) (*peering.HeartbeatResponse, error) {
	resp, err := r.Transport.Heartbeat(ctx, addrs, req)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return resp, err
}

// TestErrorMessagesPrefix drives failing operations of every part of the
// package (construction, reads, blocking queries, deletion, exports and
// the exported-services entry, tokens, establishment through the peer,
// the peer-to-peer handlers, the worker, the in-process transport) and
// checks that each error's message starts with "peering: " and names the
// package only there, with its kind and, for a broken rule, its fields,
// whose rules do not name the package (issue 31).
func TestErrorMessagesPrefix(t *testing.T) {
	ctx := context.Background()
	type check struct {
		name   string
		err    error
		kind   keel.Kind
		fields []string // for KindInvalid: the fields, in order
	}
	var checks []check
	add := func(name string, err error, kind keel.Kind, fields ...string) {
		checks = append(checks, check{name, err, kind, fields})
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	// Construction.
	_, err := peering.New(nil, nil, nil)
	add("New: no store, no transport", err, keel.KindInvalid, "Store", "Transport")
	_, err = peering.Open(ctx, nil, nil, nil)
	add("Open: nothing given", err, keel.KindInvalid, "Store", "Transport", "Authorizer")
	unused := memstore.New(nil)
	t.Cleanup(func() { unused.Close() })
	_, err = peering.Open(canceled, unused, &peeringtest.Network{}, &peering.Options{Authorizer: keel.AllowAll{}})
	add("Open: context canceled", err, keel.KindCanceled)
	claimed := memstore.New(nil)
	t.Cleanup(func() { claimed.Close() })
	if err := storage.Claim(storage.Sub(claimed, "kv/"), "kv"); err != nil {
		t.Fatal(err)
	}
	_, err = peering.New(storage.Sub(claimed, "kv/peering/"), &peeringtest.Network{}, nil)
	add("New: a part of another kind", err, keel.KindInvalid, "Store")

	// Reads, deletion and exports, with and without rights.
	w := newWorld(t, everystore.Mem)
	w.peer(t)
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"web": {{Path: "peering/web", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := w.add(t, "dc9", "10.0.0.9:8300", memstore.New(nil), authz)
	root := keel.WithPrincipal(ctx, keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
	web := keel.WithPrincipal(ctx, keel.Principal{ID: "w", Policies: []string{"web"}})
	nobody := keel.WithPrincipal(ctx, keel.Principal{ID: "n"})
	_, _, err = w.a.svc.Get(ctx, "missing", peering.Query{})
	add("Get: missing", err, keel.KindNotFound)
	_, _, err = w.a.svc.Get(ctx, "b", peering.Query{WaitTime: -time.Second, Partition: "eng"})
	add("Get: broken query", err, keel.KindInvalid, "Partition", "WaitTime")
	_, _, err = c.svc.Get(web, "db", peering.Query{})
	add("Get: forbidden", err, keel.KindForbidden)
	_, idx, _ := w.a.svc.Get(ctx, "b", peering.Query{})
	_, _, err = w.a.svc.Get(canceled, "b", peering.Query{MinIndex: idx})
	add("Get: blocking query canceled", err, keel.KindCanceled)
	_, err = w.a.svc.List(ctx, peering.Query{Partition: "eng"})
	add("List: partition", err, keel.KindInvalid, "Partition")
	_, err = c.svc.List(nobody, peering.Query{})
	add("List: no peering:read anywhere", err, keel.KindForbidden)
	add("Delete: partition", w.a.svc.Delete(ctx, "b", peering.DeleteRequest{Partition: "eng"}), keel.KindInvalid, "Partition")
	add("Delete: forbidden", c.svc.Delete(web, "web", peering.DeleteRequest{}), keel.KindForbidden)
	add("PutExportedServices: missing peering", w.a.svc.PutExportedServices(ctx, "missing", []string{"web"}), keel.KindNotFound)
	add("PutExportedServices: empty name", w.a.svc.PutExportedServices(ctx, "b", []string{""}), keel.KindInvalid, "ExportedServices")
	add("PutExportedServices: forbidden", c.svc.PutExportedServices(web, "web", nil), keel.KindForbidden)

	// The exported-services entry.
	_, _, err = w.a.svc.GetExportedServicesEntry(ctx, "default")
	add("GetExportedServicesEntry: never set", err, keel.KindNotFound)
	_, _, err = w.a.svc.GetExportedServicesEntry(ctx, "other")
	add("GetExportedServicesEntry: other name", err, keel.KindNotFound)
	add("PutExportedServicesEntry: broken rules", w.a.svc.PutExportedServicesEntry(ctx, &peering.ExportedServicesEntry{
		Name: "other", Services: []peering.ExportedService{{Consumers: []string{"Not_A_Label"}}},
	}), keel.KindInvalid, "Name", "Services[0].Name", "Services[0].Consumers[0].Peer")
	add("PutExportedServicesEntry: forbidden", c.svc.PutExportedServicesEntry(web, entry(peering.ExportedService{Name: "web", Consumers: []string{"web"}})), keel.KindForbidden)
	bounded := w.add(t, "dc8", "10.0.0.8:8300", memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 10}}), nil)
	add("PutExportedServicesEntry: over Limits().MaxConsumerPeers", bounded.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: []string{"p1", "p2", "p3"}})), keel.KindInvalid, "Services")
	if err := w.a.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: []string{"b"}})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.svc.GenerateToken(root, peering.TokenRequest{PeerName: "db"}); err != nil {
		t.Fatal(err)
	}
	if err := c.svc.PutExportedServicesEntry(root, entry(peering.ExportedService{Name: "web", Consumers: []string{"db"}})); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.svc.GetExportedServicesEntry(web, "default")
	add("GetExportedServicesEntry: forbidden", err, keel.KindForbidden)

	// Tokens and establishment.
	_, err = w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "Not_A_Label", Partition: "eng", ServerExternalAddresses: []string{"nowhere"}})
	add("GenerateToken: broken rules", err, keel.KindInvalid, "PeerName", "Partition", "ServerExternalAddresses")
	_, err = w.b.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "a"})
	add("GenerateToken: name of a dialer", err, keel.KindInvalid, "PeerName")
	_, err = c.svc.GenerateToken(web, peering.TokenRequest{PeerName: "web"})
	add("GenerateToken: forbidden", err, keel.KindForbidden)
	add("Establish: not a token", w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "x", PeeringToken: "bm90IGEgdG9rZW4="}), keel.KindInvalid, "PeeringToken")
	own, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "own"})
	if err != nil {
		t.Fatal(err)
	}
	add("Establish: a token of this cluster", w.a.svc.Establish(ctx, peering.EstablishRequest{PeerName: "x", PeeringToken: own}), keel.KindInvalid, "PeeringToken")
	used, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "used"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "used", PeeringToken: used}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.b.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "acc"}); err != nil {
		t.Fatal(err)
	}
	add("Establish: name of an acceptor", w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "acc", PeeringToken: own}), keel.KindInvalid, "PeerName")
	add("Establish: used token, refused by the peer", w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "again", PeeringToken: used}), keel.KindInvalid, "PeeringToken")
	w.net.SetDown(w.a.addr, true)
	add("Establish: peer unreachable", w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "down", PeeringToken: own}), keel.KindUnavailable)
	w.net.SetDown(w.a.addr, false)
	add("Establish: forbidden", c.svc.Establish(web, peering.EstablishRequest{PeerName: "web"}), keel.KindForbidden)

	// Deletion in progress.
	if err := w.a.svc.Delete(ctx, "used", peering.DeleteRequest{}); err != nil {
		t.Fatal(err)
	}
	add("PutExportedServices: being deleted", w.a.svc.PutExportedServices(ctx, "used", []string{"web"}), keel.KindConflict)
	_, err = w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "used"})
	add("GenerateToken: being deleted", err, keel.KindConflict)

	// The peer-to-peer handlers.
	pb, _, err := w.a.svc.Get(ctx, "b", peering.Query{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.a.svc.HandleExchange(ctx, &peering.ExchangeRequest{PeerID: "6d3b4f0a-9c1e-4f7a-8a42-0e6f1c2b9d11"})
	add("HandleExchange: no such peering", err, keel.KindInvalid, "PeeringToken")
	_, err = w.a.svc.HandleExchange(ctx, &peering.ExchangeRequest{PeerID: pb.ID, EstablishmentSecret: "wrong"})
	add("HandleExchange: used secret", err, keel.KindInvalid, "PeeringToken")
	_, err = w.a.svc.HandleHeartbeat(ctx, &peering.HeartbeatRequest{PeerID: "nobody"})
	add("HandleHeartbeat: no such peering", err, keel.KindNotFound)
	_, err = w.a.svc.HandleHeartbeat(ctx, &peering.HeartbeatRequest{PeerID: pb.ID, StreamSecret: "wrong"})
	add("HandleHeartbeat: wrong secret", err, keel.KindForbidden)
	add("HandleTerminate: wrong secret", w.a.svc.HandleTerminate(ctx, &peering.TerminateRequest{PeerID: pb.ID, StreamSecret: "wrong"}), keel.KindForbidden)

	// A heartbeat to a peering its acceptor deleted: the dialer's worker
	// gets the acceptor's conflict through the transport.
	{
		clock := keel.NewFakeClock(t0)
		net := &peeringtest.Network{}
		rec := &recorder{Transport: net}
		opts := func(dc, addr string) *peering.Options {
			return &peering.Options{Datacenter: dc, Addresses: []string{addr}, Clock: clock, Logger: quiet()}
		}
		accStore, dialStore := memstore.New(nil), memstore.New(nil)
		t.Cleanup(func() { accStore.Close(); dialStore.Close() })
		acc, err := peering.New(accStore, rec, opts("dc1", "10.1.0.1:8300"))
		if err != nil {
			t.Fatal(err)
		}
		dial, err := peering.New(dialStore, rec, opts("dc2", "10.1.0.2:8300"))
		if err != nil {
			t.Fatal(err)
		}
		net.Register("10.1.0.1:8300", acc)
		net.Register("10.1.0.2:8300", dial)
		tok, err := acc.GenerateToken(ctx, peering.TokenRequest{PeerName: "d"})
		if err != nil {
			t.Fatal(err)
		}
		if err := dial.Establish(ctx, peering.EstablishRequest{PeerName: "a", PeeringToken: tok}); err != nil {
			t.Fatal(err)
		}
		if err := acc.Delete(ctx, "d", peering.DeleteRequest{}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(defaultHeartbeatInterval)
		if _, err := dial.Step(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		if len(rec.errs) != 1 {
			t.Fatalf("heartbeat errors %v, want one", rec.errs)
		}
		add("Heartbeat: the acceptor's conflict", rec.errs[0], keel.KindConflict)
	}

	// Failing stores: the store's errors, through the peer too.
	fs := faultstore.New(memstore.New(nil))
	f := w.add(t, "dc3", "10.0.0.3:8300", fs, nil)
	fs.Rerun(true)
	fs.Fail(faultstore.OpCommit, "", 1, errBoom)
	_, err = f.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
	add("GenerateToken: the store fails", err, keel.KindUnknown)
	tok, err := f.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "b"})
	if err != nil {
		t.Fatal(err)
	}
	fs.Fail(faultstore.OpPut, "peering/name/", 1, errBoom)
	add("Establish: the acceptor's store fails", w.b.svc.Establish(ctx, peering.EstablishRequest{PeerName: "f", PeeringToken: tok}), keel.KindUnknown)
	fs.Fail(faultstore.OpScan, "", 1, errBoom)
	_, err = f.svc.Step(ctx, w.clock.Now())
	add("Step: the store fails", err, keel.KindUnknown)
	_, err = f.svc.Step(canceled, w.clock.Now())
	add("Step: context canceled", err, keel.KindCanceled)

	for _, c := range checks {
		if c.kind == keel.KindNone {
			if c.err != nil {
				t.Errorf("%s: %v", c.name, c.err)
			}
			continue
		}
		wantPrefixOnce(t, c.name, c.err, c.kind, c.fields)
	}
	if len(checks) < 40 {
		t.Errorf("%d failing operations checked, want the whole set", len(checks))
	}
}

// wantPrefixOnce fails unless err's message starts with "peering: " and
// names the package only there, err is of kind want, and, for a broken
// rule, its field errors are on fields, with rules that do not name the
// package.
func wantPrefixOnce(t *testing.T, name string, err error, want keel.Kind, fields []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "peering: ") || strings.Count(msg, "peering: ") != 1 {
		t.Errorf("%s: message %q does not start with \"peering: \" exactly once", name, msg)
	}
	if got := keel.KindOf(err); got != want {
		t.Errorf("%s: kind %v, want %v (%q)", name, got, want, msg)
	}
	if want == keel.KindUnknown && !errors.Is(err, errBoom) {
		t.Errorf("%s: %q does not wrap the store's error", name, msg)
	}
	var got []string
	for _, fe := range keel.FieldErrors(err) {
		got = append(got, fe.Field)
		if strings.Contains(fe.Rule, "peering: ") {
			t.Errorf("%s: the rule of %s names the package: %q", name, fe.Field, fe.Rule)
		}
	}
	if !slices.Equal(got, fields) {
		t.Errorf("%s: fields %v, want %v (%q)", name, got, fields, msg)
	}
}

// TestErrorPrefixGuard parses the package's files and checks that every
// exported function or method that returns an error, and does not only
// return nil, defers prefixErr first (see errors.go): an error it passes
// on from the store, the context or the Authorizer then names the package
// too.
func TestErrorPrefixGuard(t *testing.T) {
	if checked := keeltest.CheckDeferredPrefix(t); checked < 14 {
		t.Errorf("%d exported functions returning an error checked, want every one", checked)
	}
}
