package peering_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
)

func entry(svcs ...peering.ExportedService) *peering.ExportedServicesEntry {
	return &peering.ExportedServicesEntry{Name: "default", Services: svcs}
}

func TestExportedServicesEntry(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		_, _, err := w.a.svc.GetExportedServicesEntry(ctx, "default")
		wantKind(t, err, keel.KindNotFound)
		w.peer(t)

		// "later" has no peering yet: skipped now, applied when it is created.
		e := entry(
			peering.ExportedService{Name: "web", Consumers: []string{"b", "later"}},
			peering.ExportedService{Name: "api", Consumers: []string{"b", "b"}},
		)
		if err := w.a.svc.PutExportedServicesEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		if got := read(t, w.a, "b").StreamStatus.ExportedServices; !slices.Equal(got, []string{"api", "web"}) {
			t.Fatalf("a exports %v", got)
		}
		// The acceptor's exports reach the dialer at its next heartbeat.
		w.clock.Advance(defaultHeartbeatInterval)
		w.step(t)
		if got := read(t, w.b, "a").StreamStatus.ImportedServices; !slices.Equal(got, []string{"api", "web"}) {
			t.Fatalf("b imports %v", got)
		}
		got, idx, err := w.a.svc.GetExportedServicesEntry(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "default" || len(got.Services) != 2 || !slices.Equal(got.Services[1].Consumers, []string{"b"}) ||
			got.CreateIndex == 0 || got.ModifyIndex != got.CreateIndex || idx < got.ModifyIndex {
			t.Fatalf("entry %+v index %d", got, idx)
		}
		if _, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: "later"}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, w.a, "later").StreamStatus.ExportedServices; !slices.Equal(got, []string{"web"}) {
			t.Fatalf("later exports %v", got)
		}

		// A peering no longer named exports nothing.
		if err := w.a.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: []string{"later"}})); err != nil {
			t.Fatal(err)
		}
		if got := read(t, w.a, "b").StreamStatus.ExportedServices; len(got) != 0 {
			t.Fatalf("a still exports %v", got)
		}
		again, _, err := w.a.svc.GetExportedServicesEntry(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if again.CreateIndex != got.CreateIndex || again.ModifyIndex <= got.ModifyIndex {
			t.Fatalf("indexes %d/%d after %d/%d", again.CreateIndex, again.ModifyIndex, got.CreateIndex, got.ModifyIndex)
		}
		_, _, err = w.a.svc.GetExportedServicesEntry(ctx, "other")
		wantKind(t, err, keel.KindNotFound)
	})
}

func TestExportedServicesEntryRules(t *testing.T) {
	w := newWorld(t, everystore.Mem)
	ctx := context.Background()
	for _, tt := range []struct {
		entry *peering.ExportedServicesEntry
		field string
	}{
		{&peering.ExportedServicesEntry{Name: "other"}, "Name"},
		{&peering.ExportedServicesEntry{Partition: "eng"}, "Partition"},
		{entry(peering.ExportedService{Name: "", Consumers: []string{"b"}}), "Services[0].Name"},
		{entry(peering.ExportedService{Name: "web"}), "Services[0].Consumers"},
		{entry(peering.ExportedService{Name: "web", Consumers: []string{"Not_A_Label"}}), "Services[0].Consumers[0].Peer"},
	} {
		err := w.a.svc.PutExportedServicesEntry(ctx, tt.entry)
		wantKind(t, err, keel.KindInvalid)
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != tt.field {
			t.Errorf("%+v: field errors %v, want one on %s", tt.entry, fe, tt.field)
		}
	}
	if err := w.a.svc.PutExportedServicesEntry(ctx, &peering.ExportedServicesEntry{Partition: peering.DefaultPartition}); err != nil {
		t.Fatalf("the default partition: %v", err)
	}
}

func TestExportedServicesEntryRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := &world{clock: keel.NewFakeClock(t0), net: &peeringtest.Network{}}
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"b-only": {{Path: "peering/b", Capabilities: []keel.Capability{keel.CapPeeringRead, keel.CapPeeringWrite}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		c := w.add(t, "dc1", "10.0.0.1:8300", open(t), authz)
		ctx := keel.WithPrincipal(context.Background(), keel.Principal{Policies: []string{"b-only"}})
		if err := c.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: []string{"b"}})); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.svc.GetExportedServicesEntry(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		wantKind(t, c.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: []string{"c"}})), keel.KindForbidden)
		// Dropping b needs no more than write on b.
		if err := c.svc.PutExportedServicesEntry(ctx, entry()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestExportedServicesEntrySize sets entries of Limits().MaxConsumerPeers
// peerings (100 on a store without a bound), then replaces them with as
// many other peerings, on every store: both fit one transaction. An entry
// of one peering more is refused on Services, naming the limit, and
// changes nothing.
func TestExportedServicesEntrySize(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open)
		ctx := context.Background()
		limit := w.a.svc.Limits().MaxConsumerPeers
		if open(t).Limits().MaxTxOps > 0 && limit == 0 {
			t.Fatal("MaxConsumerPeers is 0 on a bounded store")
		}
		n := limit
		if n == 0 {
			n = 100
		}
		names := func(prefix string, n int) []string {
			var out []string
			for i := range n {
				out = append(out, fmt.Sprintf("%s%03d", prefix, i))
			}
			return out
		}
		first, second := names("p", n), names("q", n+1)
		for _, name := range append(slices.Clone(first), second...) {
			if _, err := w.a.svc.GenerateToken(ctx, peering.TokenRequest{PeerName: name}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.a.svc.PutExportedServicesEntry(ctx, entry(peering.ExportedService{Name: "web", Consumers: first})); err != nil {
			t.Fatalf("%d consumers: %v", n, err)
		}
		if err := w.a.svc.PutExportedServicesEntry(ctx, entry(
			peering.ExportedService{Name: "web", Consumers: second[:n/2]},
			peering.ExportedService{Name: "api", Consumers: second[n/2 : n]},
		)); err != nil {
			t.Fatalf("%d other consumers: %v", n, err)
		}
		for _, name := range []string{first[0], first[n-1]} {
			if got := read(t, w.a, name).StreamStatus.ExportedServices; len(got) != 0 {
				t.Errorf("%s still exports %v", name, got)
			}
		}
		if got := read(t, w.a, second[n-1]).StreamStatus.ExportedServices; !slices.Equal(got, []string{"api"}) {
			t.Errorf("%s exports %v, want [api]", second[n-1], got)
		}
		if limit == 0 {
			return
		}
		before, _, err := w.a.svc.GetExportedServicesEntry(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		err = w.a.svc.PutExportedServicesEntry(ctx, entry(
			peering.ExportedService{Name: "web", Consumers: second[:n]},
			peering.ExportedService{Name: "db", Consumers: second[n:]},
		))
		wantKind(t, err, keel.KindInvalid)
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Services" || !strings.Contains(fe[0].Rule, fmt.Sprintf("at most %d", limit)) {
			t.Errorf("%d consumers: field errors %v, want one on Services naming the limit %d", n+1, fe, limit)
		}
		after, _, err := w.a.svc.GetExportedServicesEntry(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if after.ModifyIndex != before.ModifyIndex {
			t.Errorf("a refused entry changed the stored one: index %d, was %d", after.ModifyIndex, before.ModifyIndex)
		}
		if got := read(t, w.a, second[n]).StreamStatus.ExportedServices; len(got) != 0 {
			t.Errorf("a refused entry exported %v to %s", got, second[n])
		}
	})
}
