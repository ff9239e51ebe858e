package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
)

// TestConsulAnswers: through the whole server (its token check, and its
// mux, where the Vault dialect serves the rest of /v1/), the Consul routes
// answer as Consul: a token the server does not know is 403 "ACL not
// found" (the server leaves such a request without a principal), no token
// is the anonymous caller, /v1/peering/ without a name is 400 (not the
// Vault dialect's), and a misspelt field or a ?wait without a unit is 400.
func TestConsulAnswers(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", "root-c")
	ctx := context.Background()
	root := consulClient(t, ts, "root-c")
	if _, _, err := root.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil); err != nil {
		t.Fatal(err)
	}

	unknown := consulClient(t, ts, "not-a-token")
	_, _, readErr := unknown.Peerings().Read(ctx, "b", nil)
	_, _, listErr := unknown.Peerings().List(ctx, nil)
	_, _, genErr := unknown.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "c"}, nil)
	_, delErr := unknown.Peerings().Delete(ctx, "b", nil)
	for call, err := range map[string]error{"Read": readErr, "List": listErr, "GenerateToken": genErr, "Delete": delErr} {
		if err == nil || !strings.Contains(err.Error(), "403 (ACL not found)") {
			t.Errorf("%s with an unknown token: error %v, want 403 (ACL not found)", call, err)
		}
	}
	if l, _, err := root.Peerings().List(ctx, nil); err != nil || len(l) != 1 || l[0].Name != "b" || l[0].DeletedAt != nil {
		t.Fatalf("peerings after the refusals: %+v %v", l, err)
	}

	rootHeader := []string{"X-Cluster-Token", "root-c"}
	for name, tc := range map[string]struct {
		method, path, body string
		header             []string
		status             int
		want               string
	}{
		"no name":                {"GET", "/v1/peering/", "", rootHeader, 400, "Must specify a name to fetch."},
		"no name, delete":        {"DELETE", "/v1/peering/", "", rootHeader, 400, "Must specify a name to fetch."},
		"no name, no token":      {"GET", "/v1/peering/", "", nil, 400, "Must specify a name to fetch."},
		"anonymous":              {"GET", "/v1/peering/b", "", nil, 403, "Permission denied: anonymous token lacks permission 'peering:read'. The anonymous token is used implicitly when a request does not specify a token."},
		"unknown Bearer token":   {"GET", "/v1/peering/b", "", []string{"Authorization", "Bearer not-a-token"}, 403, "ACL not found"},
		"wait without a unit":    {"GET", "/v1/peerings?wait=1", "", rootHeader, 400, "Invalid wait time"},
		"misspelt field":         {"POST", "/v1/peering/token", `{"PeerName":"c","ServerExternalAddress":["10.0.0.1:8503"]}`, rootHeader, 400, `Body decoding failed: json: unknown field "ServerExternalAddress"`},
		"unknown field of entry": {"PUT", "/v1/config", `{"Kind":"exported-services","Name":"default","Servicez":[]}`, rootHeader, 400, `Request decoding failed: json: unknown field "Servicez"`},
	} {
		status, body := ts.send(t, tc.method, tc.path, tc.body, tc.header...)
		if status != tc.status || body != tc.want {
			t.Errorf("%s: %s %s: %d %q, want %d %q", name, tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
	if p, _, err := root.Peerings().Read(ctx, "c", nil); p != nil || err != nil {
		t.Fatalf("peering c after the refusals: %+v %v", p, err)
	}
	if status, _ := ts.send(t, "GET", "/v1/peering/b", "", rootHeader...); status != http.StatusOK {
		t.Fatalf("read with the root token: %d", status)
	}
}
