package consul_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/storage/memstore"
)

// server is one keel cluster served over HTTP.
type server struct {
	svc    *peering.Service
	ts     *httptest.Server
	client *api.Client
}

var tokens = map[string]keel.Principal{
	"root-token": {ID: "root", Policies: []string{keel.RootPolicy}},
	"web-token":  {ID: "web", ClientTokenID: "web-id", Policies: []string{"web"}},
}

func newServer(t *testing.T, dc string, clock keel.Clock) *server {
	t.Helper()
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"web": {{Path: "peering/web", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	mux := http.NewServeMux()
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := tokens[r.Header.Get("X-Cluster-Token")]; ok {
			r = r.WithContext(keel.WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.ts.Close)
	addr := strings.TrimPrefix(s.ts.URL, "http://")
	store := memstore.New(nil)
	t.Cleanup(func() { store.Close() })
	s.svc, err = peering.New(store, &consul.HTTPTransport{Client: s.ts.Client()}, &peering.Options{
		Datacenter: dc, Addresses: []string{addr}, Clock: clock, Authorizer: authz,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	consul.New(s.svc, nil).Register(mux)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "catch-all", http.StatusTeapot) })
	s.client = newClient(t, s.ts.URL, "root-token")
	return s
}

func newClient(t *testing.T, url, token string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = url
	cfg.Token = ""
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.AddHeader("X-Cluster-Token", token)
	return c
}

func TestPeeringWithConsulClient(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := newServer(t, "dc1", clock), newServer(t, "dc2", clock)
	ctx := context.Background()

	gen, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b", Meta: map[string]string{"env": "test"}}, nil)
	if err != nil {
		t.Fatalf("GenerateToken: %v", err)
	}
	if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a", PeeringToken: gen.PeeringToken}, nil); err != nil {
		t.Fatalf("Establish: %v", err)
	}
	pa, qm, err := a.client.Peerings().Read(ctx, "b", nil)
	if err != nil || pa == nil {
		t.Fatalf("Read: %v %v", pa, err)
	}
	if pa.State != api.PeeringStateActive || pa.Remote.Datacenter != "dc2" || pa.Meta["env"] != "test" || qm.LastIndex != pa.ModifyIndex || pa.CreateIndex == 0 {
		t.Fatalf("peering %+v, index %d", pa, qm.LastIndex)
	}
	pb, _, err := b.client.Peerings().Read(ctx, "a", nil)
	if err != nil || pb.State != api.PeeringStateActive || pb.PeerID != pa.ID || pb.StreamStatus.LastHeartbeat == nil {
		t.Fatalf("the other side %+v, %v", pb, err)
	}

	t.Run("used token refused with 403", func(t *testing.T) {
		// Consul: 403, "a new peering token must be generated".
		_, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "again", PeeringToken: gen.PeeringToken}, nil)
		if err == nil || !strings.Contains(err.Error(), "403 (a new peering token must be generated: invalid peering establishment secret)") {
			t.Fatalf("error %v", err)
		}
		if p, _, err := b.client.Peerings().Read(ctx, "again", nil); p != nil || err != nil {
			t.Fatalf("refused establish left %+v %v", p, err)
		}
	})
	t.Run("bad request 400", func(t *testing.T) {
		_, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "Not_A_Label"}, nil)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "PeerName") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("missing peering reads as nil", func(t *testing.T) {
		p, qm, err := a.client.Peerings().Read(ctx, "nobody", nil)
		if err != nil || p != nil || qm.LastIndex == 0 {
			t.Fatalf("read %v %v %v", p, qm, err)
		}
	})
	t.Run("list filtered", func(t *testing.T) {
		if _, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "web"}, nil); err != nil {
			t.Fatal(err)
		}
		web := newClient(t, a.ts.URL, "web-token")
		l, qm, err := web.Peerings().List(ctx, nil)
		if err != nil || len(l) != 1 || l[0].Name != "web" || !qm.ResultsFilteredByACLs {
			t.Fatalf("list %v %+v %v", l, qm, err)
		}
		l, qm, err = a.client.Peerings().List(ctx, nil)
		if err != nil || len(l) != 2 || qm.ResultsFilteredByACLs || qm.LastIndex == 0 {
			t.Fatalf("list %v %+v %v", l, qm, err)
		}
	})
	t.Run("list without peering:read 403", func(t *testing.T) {
		anonymous := newClient(t, a.ts.URL, "")
		if l, _, err := anonymous.Peerings().List(ctx, nil); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("anonymous list: %v, %v; want 403", l, err)
		}
	})
	t.Run("forbidden 403", func(t *testing.T) {
		web := newClient(t, a.ts.URL, "web-token")
		_, err := web.Peerings().Delete(ctx, "b", nil)
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if _, err := a.client.Peerings().Delete(ctx, "b", nil); err != nil {
			t.Fatal(err)
		}
		p, _, err := a.client.Peerings().Read(ctx, "b", nil)
		if err != nil || p.State != api.PeeringStateTerminated || p.DeletedAt == nil {
			t.Fatalf("after delete %+v %v", p, err)
		}
		if _, err := a.svc.Step(ctx, clock.Now()); err != nil { // the worker's step
			t.Fatal(err)
		}
		if p, _, _ := a.client.Peerings().Read(ctx, "b", nil); p != nil {
			t.Fatalf("not removed: %+v", p)
		}
		if p, _, _ := b.client.Peerings().Read(ctx, "a", nil); p == nil || p.State != api.PeeringStateTerminated {
			t.Fatalf("other side %+v", p)
		}
		if _, err := a.client.Peerings().Delete(ctx, "b", nil); err != nil {
			t.Fatalf("deleting a missing peering: %v", err)
		}
	})
}

func TestBlockingRead(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := newServer(t, "dc1", clock)
	t.Cleanup(func() { clock.Advance(time.Hour) }) // never leave a read blocked
	ctx := context.Background()
	root := keel.WithPrincipal(ctx, tokens["root-token"])
	a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil)
	_, qm, _ := a.client.Peerings().Read(ctx, "b", nil)
	got := make(chan *api.Peering, 1)
	go func() {
		p, _, _ := a.client.Peerings().Read(ctx, "b", &api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: time.Minute})
		got <- p
	}()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.svc.PutExportedServices(root, "b", []string{"web"}); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p == nil || len(p.StreamStatus.ExportedServices) != 1 {
		t.Fatalf("blocking read returned %+v", p)
	}
}

func TestRawHTTP(t *testing.T) {
	a := newServer(t, "dc1", keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	tests := []struct {
		name, method, path string
		want               int
		contentType        string
	}{
		{"token other method", http.MethodGet, "/v1/peering/token", http.StatusMethodNotAllowed, ""},
		{"establish other method", http.MethodPut, "/v1/peering/establish", http.StatusMethodNotAllowed, ""},
		{"peering other method", http.MethodPost, "/v1/peering/x", http.StatusMethodNotAllowed, ""},
		{"peerings other method", http.MethodDelete, "/v1/peerings", http.StatusMethodNotAllowed, ""},
		{"missing peering 404 text", http.MethodGet, "/v1/peering/nobody", http.StatusNotFound, "text/plain"},
		{"bad index 400 text", http.MethodGet, "/v1/peerings?index=x", http.StatusBadRequest, "text/plain"},
		{"bad wait 400 text", http.MethodGet, "/v1/peerings?wait=soon", http.StatusBadRequest, "text/plain"},
		{"bad partition 400", http.MethodGet, "/v1/peerings?partition=eng", http.StatusBadRequest, "text/plain"},
		{"bad partition of a delete 400", http.MethodDelete, "/v1/peering/x?partition=eng", http.StatusBadRequest, "text/plain"},
		{"consistent accepted", http.MethodGet, "/v1/peerings?consistent", http.StatusOK, "application/json"},
		{"bad body 400", http.MethodPost, "/v1/peering/token", http.StatusBadRequest, "text/plain"},
		{"other paths untouched", http.MethodGet, "/v1/kv/x", http.StatusTeapot, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.method == http.MethodPost {
				body = strings.NewReader("{not json")
			}
			req, _ := http.NewRequest(tt.method, a.ts.URL+tt.path, body)
			req.Header.Set("X-Cluster-Token", "root-token")
			resp, err := a.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) {
				t.Fatalf("status %d %q, want %d %q", resp.StatusCode, resp.Header.Get("Content-Type"), tt.want, tt.contentType)
			}
			if tt.method == http.MethodGet && tt.want < 300 && (resp.Header.Get("X-Cluster-Index") == "" || resp.Header.Get("X-Cluster-Index") == "0") {
				t.Fatalf("X-Cluster-Index %q", resp.Header.Get("X-Cluster-Index"))
			}
			if resp.Header.Get("X-Cluster-Results-Filtered-By-ACLs") != "" {
				t.Fatal("filtered header without filtering")
			}
		})
	}
}
