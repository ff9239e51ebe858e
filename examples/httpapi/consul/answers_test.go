package consul_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/keelhq/keel"
)

// send sends method path with body (none when empty) to s, with each
// header (name, value), and returns the status and the body.
func send(t *testing.T, s *server, method, path, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

const anonymousDenied = "Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token."

// TestUnknownToken: a token the program does not know answers 403 "ACL not
// found" on every client route, as Consul, and changes nothing; no token at
// all is the anonymous caller, refused in Consul's words; a known token
// without the right is named by its ClientTokenID.
func TestUnknownToken(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := newServer(t, "dc1", clock), newServer(t, "dc2", clock)
	ctx := context.Background()
	gen, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const aclNotFound = "403 (ACL not found)"
	for name, c := range map[string]*api.Client{
		"unknown X-Cluster-Token": newClient(t, a.ts.URL, "nobody-token"),
		"unknown Bearer token": func() *api.Client {
			c := newClient(t, a.ts.URL, "")
			c.AddHeader("Authorization", "Bearer nobody-token")
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			calls := map[string]func() error{
				"GenerateToken": func() error {
					_, _, err := c.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "x"}, nil)
					return err
				},
				"Establish": func() error {
					_, _, err := c.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "x", PeeringToken: gen.PeeringToken}, nil)
					return err
				},
				"Read": func() error {
					_, _, err := c.Peerings().Read(ctx, "b", nil)
					return err
				},
				"Delete": func() error {
					_, err := c.Peerings().Delete(ctx, "b", nil)
					return err
				},
				"List": func() error {
					_, _, err := c.Peerings().List(ctx, nil)
					return err
				},
				"ConfigEntries.Set": func() error {
					_, _, err := c.ConfigEntries().Set(&api.ExportedServicesConfigEntry{Name: "default", Services: []api.ExportedService{{Name: "web", Consumers: []api.ServiceConsumer{{Peer: "b"}}}}}, nil)
					return err
				},
				"ConfigEntries.Get": func() error {
					_, _, err := c.ConfigEntries().Get(api.ExportedServices, "default", nil)
					return err
				},
			}
			for call, fn := range calls {
				if err := fn(); err == nil || !strings.Contains(err.Error(), aclNotFound) {
					t.Errorf("%s: error %v, want %s", call, err, aclNotFound)
				}
			}
		})
	}
	// Nothing changed: the peering b is still INITIAL, x does not exist,
	// no entry was written, and the token still establishes.
	l, _, err := a.client.Peerings().List(ctx, nil)
	if err != nil || len(l) != 1 || l[0].Name != "b" || l[0].State != "INITIAL" {
		t.Fatalf("peerings after the refusals: %+v %v", l, err)
	}
	if e, _, err := a.client.ConfigEntries().Get(api.ExportedServices, "default", nil); err == nil {
		t.Fatalf("entry written: %+v", e)
	}
	if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a", PeeringToken: gen.PeeringToken}, nil); err != nil {
		t.Fatalf("the token no longer establishes: %v", err)
	}

	t.Run("no token is the anonymous caller", func(t *testing.T) {
		for _, tc := range []struct{ method, path, body, need string }{
			{"GET", "/v1/peering/b", "", "peering:read"},
			{"DELETE", "/v1/peering/b", "", "peering:write"},
			{"POST", "/v1/peering/token", `{"PeerName":"x"}`, "peering:write"},
			{"PUT", "/v1/config", `{"Kind":"exported-services","Name":"default","Services":[{"Name":"web","Consumers":[{"Peer":"b"}]}]}`, "peering:write"},
		} {
			status, body := send(t, a, tc.method, tc.path, tc.body)
			if want := strings.Replace(anonymousDenied, "%s", tc.need, 1); status != http.StatusForbidden || body != want {
				t.Errorf("%s %s: %d %q, want 403 %q", tc.method, tc.path, status, body, want)
			}
		}
	})
	t.Run("known token without the right", func(t *testing.T) {
		status, body := send(t, a, "DELETE", "/v1/peering/b", "", "X-Cluster-Token", "web-token")
		if want := "Permission denied: token with AccessorID 'web-id' lacks permission 'peering:write'"; status != http.StatusForbidden || body != want {
			t.Errorf("%d %q, want 403 %q", status, body, want)
		}
	})
	t.Run("peer-to-peer paths take no token", func(t *testing.T) {
		status, body := send(t, a, "POST", "/v1/internal/peering/heartbeat", `{}`, "X-Cluster-Token", "nobody-token")
		if strings.Contains(body, "ACL not found") {
			t.Errorf("%d %q: a peer's message is not a client's", status, body)
		}
	})
}

// TestEstablishRefusedSecret: a secret the acceptor refuses (used, replaced
// by a newer token, or forged) answers 403 as Consul; a token that is not
// one answers 400. Nothing is stored on the dialer's side.
func TestEstablishRefusedSecret(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := newServer(t, "dc1", clock), newServer(t, "dc2", clock)
	ctx := context.Background()
	generate := func() string {
		t.Helper()
		gen, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return gen.PeeringToken
	}
	replaced := generate()
	current := generate()
	forged := func() string { // the current token with another secret
		raw, err := base64.StdEncoding.DecodeString(current)
		if err != nil {
			t.Fatal(err)
		}
		var tok map[string]any
		if err := json.Unmarshal(raw, &tok); err != nil {
			t.Fatal(err)
		}
		tok["EstablishmentSecret"] = "not-the-secret"
		raw, _ = json.Marshal(tok)
		return base64.StdEncoding.EncodeToString(raw)
	}()
	const refused = "403 (a new peering token must be generated: invalid peering establishment secret)"
	for _, tc := range []struct{ name, token, want string }{
		{"replaced token", replaced, refused},
		{"forged secret", forged, refused},
		{"not a token", "bm90IGEgdG9rZW4=", "400 (establish \"a\": invalid request: PeeringToken: is not a peering token"},
	} {
		_, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a", PeeringToken: tc.token}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %s", tc.name, err, tc.want)
		}
		if p, _, err := b.client.Peerings().Read(ctx, "a", nil); p != nil || err != nil {
			t.Fatalf("%s: refused establish left %+v %v", tc.name, p, err)
		}
	}
	if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a", PeeringToken: current}, nil); err != nil {
		t.Fatalf("the current token: %v", err)
	}
	if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{PeerName: "a2", PeeringToken: current}, nil); err == nil || !strings.Contains(err.Error(), refused) {
		t.Fatalf("used token: error %v, want %s", err, refused)
	}
}

// TestUnknownFields: a body field the request does not have answers 400, as
// Consul's strict decoder, and changes nothing; every field consul/api
// sends is accepted (the client, with every field set, works), and so are
// Consul's aliases of a consumer.
func TestUnknownFields(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := newServer(t, "dc1", clock), newServer(t, "dc2", clock)
	ctx := context.Background()
	root := []string{"X-Cluster-Token", "root-token"}

	t.Run("the fields consul/api has", func(t *testing.T) {
		// If consul/api grows a field, the calls below must set it too.
		for typ, want := range map[reflect.Type][]string{
			reflect.TypeFor[api.PeeringGenerateTokenRequest](): {"PeerName", "Partition", "Meta", "ServerExternalAddresses"},
			reflect.TypeFor[api.PeeringEstablishRequest]():     {"PeerName", "PeeringToken", "Partition", "Meta"},
			reflect.TypeFor[api.ExportedServicesConfigEntry](): {"Name", "Partition", "Services", "Meta", "CreateIndex", "ModifyIndex"},
			reflect.TypeFor[api.ExportedService]():             {"Name", "Namespace", "Consumers"},
			reflect.TypeFor[api.ServiceConsumer]():             {"Partition", "Peer", "SamenessGroup"},
		} {
			var got []string
			for f := range typ.Fields() {
				got = append(got, f.Name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s has fields %v, the test knows %v", typ, got, want)
			}
		}
		meta := map[string]string{"env": "test"}
		gen, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{
			PeerName: "b", Partition: "default", Meta: meta,
			ServerExternalAddresses: []string{strings.TrimPrefix(a.ts.URL, "http://")},
		}, nil)
		if err != nil {
			t.Fatalf("GenerateToken with every field: %v", err)
		}
		if _, _, err := b.client.Peerings().Establish(ctx, api.PeeringEstablishRequest{
			PeerName: "a", PeeringToken: gen.PeeringToken, Partition: "default", Meta: meta,
		}, nil); err != nil {
			t.Fatalf("Establish with every field: %v", err)
		}
		if _, _, err := a.client.ConfigEntries().Set(&api.ExportedServicesConfigEntry{
			Name: "default", Partition: "default", Meta: meta, CreateIndex: 1, ModifyIndex: 1,
			Services: []api.ExportedService{{Name: "web", Namespace: "default", Consumers: []api.ServiceConsumer{{Peer: "b"}}}},
		}, nil); err != nil {
			t.Fatalf("ConfigEntries.Set with every field: %v", err)
		}
		// Partition and SamenessGroup of a consumer decode, and are refused
		// by the adapter's rule (an enterprise feature), not as unknown.
		_, _, err = a.client.ConfigEntries().Set(&api.ExportedServicesConfigEntry{Name: "default",
			Services: []api.ExportedService{{Name: "web", Consumers: []api.ServiceConsumer{{SamenessGroup: "g"}}}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "Services[0].Consumers[0]: ") {
			t.Fatalf("sameness group consumer: error %v", err)
		}
	})

	for _, tc := range []struct{ name, method, path, body, want string }{
		{"token: misspelt ServerExternalAddresses", "POST", "/v1/peering/token",
			`{"PeerName":"typo","ServerExternalAddress":["10.0.0.1:8503"]}`, `Body decoding failed: json: unknown field "ServerExternalAddress"`},
		{"establish: unknown field", "POST", "/v1/peering/establish",
			`{"PeerName":"typo","PeeringToken":"x","Metadata":{"a":"b"}}`, `Body decoding failed: json: unknown field "Metadata"`},
		{"config: unknown field of the entry", "PUT", "/v1/config",
			`{"Kind":"exported-services","Name":"default","Namespace":"ns"}`, `Request decoding failed: json: unknown field "Namespace"`},
		{"config: unknown field of a consumer", "PUT", "/v1/config",
			`{"Kind":"exported-services","Name":"default","Services":[{"Name":"api","Consumers":[{"Peer":"b","Peers":["b"]}]}]}`, `Request decoding failed: json: unknown field "Peers"`},
	} {
		status, body := send(t, a, tc.method, tc.path, tc.body, root...)
		if status != http.StatusBadRequest || body != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", tc.name, status, body, tc.want)
		}
	}
	// Nothing changed: no peering "typo", the entry as the client set it.
	if p, _, err := a.client.Peerings().Read(ctx, "typo", nil); p != nil || err != nil {
		t.Fatalf("peering typo: %+v %v", p, err)
	}
	e, _, err := a.client.ConfigEntries().Get(api.ExportedServices, "default", nil)
	if got, ok := e.(*api.ExportedServicesConfigEntry); err != nil || !ok || len(got.Services) != 1 || got.Services[0].Name != "web" {
		t.Fatalf("entry after the refusals: %+v %v", e, err)
	}

	t.Run("Consul's aliases of a consumer", func(t *testing.T) {
		status, body := send(t, a, "PUT", "/v1/config", `{"kind":"exported-services","name":"default","services":[{"name":"api","consumers":[{"peer_name":"b"}]}]}`, root...)
		if status != http.StatusOK || body != "true\n" {
			t.Fatalf("%d %q", status, body)
		}
		e, _, err := a.client.ConfigEntries().Get(api.ExportedServices, "default", nil)
		if got, ok := e.(*api.ExportedServicesConfigEntry); err != nil || !ok || len(got.Services) != 1 || got.Services[0].Name != "api" ||
			len(got.Services[0].Consumers) != 1 || got.Services[0].Consumers[0].Peer != "b" {
			t.Fatalf("entry %+v %v", e, err)
		}
	})
	t.Run("peer-to-peer messages ignore fields they do not have", func(t *testing.T) {
		// Peers of another version understand each other: the answer is
		// package peering's (no such peering), not a decoding failure.
		status, body := send(t, a, "POST", "/v1/internal/peering/heartbeat", `{"PeerID":"nobody","FromTheFuture":1}`)
		if strings.Contains(body, "decoding failed") || status == http.StatusOK {
			t.Fatalf("%d %q", status, body)
		}
	})
}

// TestQueryAndPathAnswers: ?wait without a unit, ?index that is not a
// number, and /v1/peering/ without a name answer 400 in Consul's words
// (the catch-all of another dialect on the same mux does not get them);
// consul/api's own ?wait ("60000ms") is accepted.
func TestQueryAndPathAnswers(t *testing.T) {
	a := newServer(t, "dc1", keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	root := []string{"X-Cluster-Token", "root-token"}
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/v1/peerings?wait=1", 400, "Invalid wait time"},
		{"GET", "/v1/peering/x?wait=30", 400, "Invalid wait time"},
		{"GET", "/v1/peerings?index=1&wait=-1s", 400, "Invalid wait time"},
		{"GET", "/v1/peerings?index=x", 400, "Invalid index"},
		{"GET", "/v1/peering/", 400, "Must specify a name to fetch."},
		{"DELETE", "/v1/peering/", 400, "Must specify a name to fetch."},
	} {
		status, body := send(t, a, tc.method, tc.path, "", root...)
		if status != tc.status || body != tc.want {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
	if status, body := send(t, a, "GET", "/v1/peerings?wait=60000ms", "", root...); status != http.StatusOK {
		t.Errorf("consul/api's wait: %d %q", status, body)
	}
}
