package tfe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gotfe "github.com/hashicorp/go-tfe"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// server is the adapter behind an httptest server. The token "root" holds
// every right; "reader" may only read and list.
type server struct {
	srv      *httptest.Server
	catalog  *project.Catalog
	policies *policy.Service
	clock    *keel.FakeClock
}

var principals = map[string]keel.Principal{
	"root":   {ID: "root", Policies: []string{keel.RootPolicy}},
	"reader": {ID: "reader", Policies: []string{"reader"}},
}

func newServer(t testing.TB) *server {
	t.Helper()
	store := memstore.New(nil)
	t.Cleanup(func() { store.Close() })
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"reader": {{Path: "organizations*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := keel.NewFakeClock(t0)
	catalog, err := project.New(storage.Sub(store, "project/"), &project.Options{Authorizer: authz, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	policies, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Authorizer: authz, Clock: clock, Organizations: catalog})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	tfe.New(catalog, policies, nil).Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := principals[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]; ok {
			r = r.WithContext(keel.WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if _, err := catalog.CreateOrganization(asRoot(), project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")}); err != nil {
		t.Fatal(err)
	}
	return &server{srv: srv, catalog: catalog, policies: policies, clock: clock}
}

func asRoot() context.Context { return keel.WithPrincipal(context.Background(), principals["root"]) }

// client returns a go-tfe client with token.
func (s *server) client(t testing.TB, token string) *gotfe.Client {
	t.Helper()
	c, err := gotfe.NewClient(&gotfe.Config{Address: s.srv.URL, Token: token, RetryServerErrors: false})
	if err != nil {
		t.Fatal(err)
	}
	c.RetryServerErrors(false)
	return c
}

// do sends a raw request with the root token.
func (s *server) do(t testing.TB, method, path, contentType string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer root")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
