package consul_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/keelhq/keel"
)

func TestExportedServicesConfigEntry(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := newServer(t, "dc1", clock), newServer(t, "dc2", clock)
	ctx := context.Background()
	gen, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a", PeeringToken: gen.PeeringToken}, nil); err != nil {
		t.Fatal(err)
	}

	ok, _, err := a.client.ConfigEntries().Set(&api.ExportedServicesConfigEntry{
		Name: "default",
		Services: []api.ExportedService{
			{Name: "web", Consumers: []api.ServiceConsumer{{Peer: "b"}}},
			{Name: "api", Consumers: []api.ServiceConsumer{{Peer: "b"}}},
		},
	}, nil)
	if err != nil || !ok {
		t.Fatalf("Set: %v %v", ok, err)
	}
	pa, _, err := a.client.Peerings().Read(ctx, "b", nil)
	if err != nil || !slices.Equal(pa.StreamStatus.ExportedServices, []string{"api", "web"}) {
		t.Fatalf("a's peering %+v %v", pa, err)
	}
	// b's worker would heartbeat; here its Step runs at the next beat.
	clock.Advance(time.Minute)
	if _, err := b.svc.Step(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	pb, _, err := b.client.Peerings().Read(ctx, "a", nil)
	if err != nil || !slices.Equal(pb.StreamStatus.ImportedServices, []string{"api", "web"}) {
		t.Fatalf("b's peering %+v %v", pb, err)
	}

	got, qm, err := a.client.ConfigEntries().Get(api.ExportedServices, "default", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	e, isExp := got.(*api.ExportedServicesConfigEntry)
	if !isExp || e.Name != "default" || len(e.Services) != 2 || e.Services[0].Name != "web" ||
		len(e.Services[0].Consumers) != 1 || e.Services[0].Consumers[0].Peer != "b" || e.ModifyIndex == 0 || qm.LastIndex < e.ModifyIndex {
		t.Fatalf("entry %+v, index %d", got, qm.LastIndex)
	}

	t.Run("dropped peer exports nothing", func(t *testing.T) {
		if _, _, err := a.client.ConfigEntries().Set(&api.ExportedServicesConfigEntry{Name: "default"}, nil); err != nil {
			t.Fatal(err)
		}
		pa, _, err := a.client.Peerings().Read(ctx, "b", nil)
		if err != nil || len(pa.StreamStatus.ExportedServices) != 0 {
			t.Fatalf("a's peering %+v %v", pa, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			entry api.ConfigEntry
			opts  *api.WriteOptions
			field string // the field the answer names
		}{
			{"other kind 400", &api.ProxyConfigEntry{Kind: api.ProxyDefaults, Name: "global"}, nil, "Kind"},
			{"partition consumer 400", &api.ExportedServicesConfigEntry{Name: "default", Services: []api.ExportedService{{Name: "web", Consumers: []api.ServiceConsumer{{Partition: "p"}}}}}, nil, "Services[0].Consumers[0]"},
			{"other name 400", &api.ExportedServicesConfigEntry{Name: "other"}, nil, "Name"},
			// The partition rule is package peering's: its answer names the field.
			{"other partition 400", &api.ExportedServicesConfigEntry{Name: "default", Partition: "eng"}, nil, "Partition"},
			{"other partition in the query 400", &api.ExportedServicesConfigEntry{Name: "default"}, &api.WriteOptions{Partition: "eng"}, "Partition"},
		} {
			_, _, err := a.client.ConfigEntries().Set(tt.entry, tt.opts)
			if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), tt.field+": ") {
				t.Errorf("%s: error %v, want a 400 naming %s", tt.name, err, tt.field)
			}
		}
		if _, _, err := a.client.ConfigEntries().Get(api.ExportedServices, "other", nil); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("missing entry: error %v", err)
		}
		web := newClient(t, a.ts.URL, "web-token") // peering:read on peering/web only
		_, _, err := web.ConfigEntries().Set(&api.ExportedServicesConfigEntry{Name: "default", Services: []api.ExportedService{{Name: "x", Consumers: []api.ServiceConsumer{{Peer: "web"}}}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("write without peering:write: error %v", err)
		}
	})
}
