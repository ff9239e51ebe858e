package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/keelhq/keel/internal/keeltest"
)

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func consulClient(t *testing.T, ts *testServer, token string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address, cfg.Token = ts.url, ""
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.AddHeader("X-Cluster-Token", token)
	return c
}

// waitPeering reads the peering name with blocking queries until ok accepts
// it, or fails the test after wait.
func waitPeering(t *testing.T, c *api.Client, name string, ok func(*api.Peering) bool) *api.Peering {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var idx uint64
	for {
		p, qm, err := c.Peerings().Read(ctx, name, &api.QueryOptions{WaitIndex: idx, WaitTime: wait})
		if err != nil {
			t.Fatalf("read %q: %v", name, err)
		}
		if ok(p) {
			return p
		}
		idx = qm.LastIndex
	}
}

func TestTwoServersPeer(t *testing.T) {
	addrA, addrB := freeAddr(t), freeAddr(t)
	// Short heartbeats, so that A's exports reach B (the dialer) fast.
	h := hooks{peeringHeartbeat: 100 * time.Millisecond}
	a := start(t, h, "-data", "memory", "-root-token", "root-a", "-addr", addrA, "-datacenter", "dc-a")
	b := start(t, h, "-data", "memory", "-root-token", "root-b", "-addr", addrB, "-datacenter", "dc-b", "-advertise", addrB)
	ca, cb := consulClient(t, a, "root-a"), consulClient(t, b, "root-b")
	ctx := context.Background()

	gen, _, err := ca.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "cluster-b"}, nil)
	if err != nil {
		t.Fatalf("GenerateToken: %v", err)
	}
	if _, _, err := cb.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "cluster-a", PeeringToken: gen.PeeringToken}, nil); err != nil {
		t.Fatalf("Establish: %v", err)
	}
	active := func(p *api.Peering) bool { return p != nil && p.State == api.PeeringStateActive }
	pa := waitPeering(t, ca, "cluster-b", active)
	pb := waitPeering(t, cb, "cluster-a", active)
	if pa.Remote.Datacenter != "dc-b" || pb.Remote.Datacenter != "dc-a" || !strings.Contains(strings.Join(pb.PeerServerAddresses, ","), addrA) {
		t.Fatalf("peerings %+v %+v", pa, pb)
	}

	// Services A exports to B, set as Consul's exported-services config
	// entry, show on B as imported.
	ok, _, err := ca.ConfigEntries().Set(&api.ExportedServicesConfigEntry{
		Name:     "default",
		Services: []api.ExportedService{{Name: "web", Consumers: []api.ServiceConsumer{{Peer: "cluster-b"}}}},
	}, nil)
	if err != nil || !ok {
		t.Fatalf("ConfigEntries().Set: %v %v", ok, err)
	}
	keeltest.Eventually(t, "B imports A's exports", func() error {
		p, _, err := cb.Peerings().Read(ctx, "cluster-a", nil)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if p == nil || !slices.Equal(p.StreamStatus.ImportedServices, []string{"web"}) {
			return fmt.Errorf("B's peering: %+v", p)
		}
		return nil
	})
	if e, _, err := ca.ConfigEntries().Get(api.ExportedServices, "default", nil); err != nil || len(e.(*api.ExportedServicesConfigEntry).Services) != 1 {
		t.Fatalf("ConfigEntries().Get: %+v %v", e, err)
	}

	// A blocking read on B returns when A's deletion reaches B, long
	// before the end of its wait.
	began := time.Now()
	if _, err := ca.Peerings().Delete(ctx, "cluster-b", nil); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	waitPeering(t, cb, "cluster-a", func(p *api.Peering) bool { return p != nil && p.State == api.PeeringStateTerminated })
	waitPeering(t, ca, "cluster-b", func(p *api.Peering) bool { return p == nil })
	if d := time.Since(began); d > wait/2 {
		t.Fatalf("deletion took %v", d)
	}
}
