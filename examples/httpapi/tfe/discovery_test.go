package tfe_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/keelhq/keel/examples/httpapi/tfe"
)

func TestDiscovery(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET "+tfe.DiscoveryPath, tfe.DiscoveryHandler())
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/.well-known/terraform.json")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc map[string]string
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := map[string]string{"tfe.v2": "/api/v2/", "tfe.v2.1": "/api/v2/", "tfe.v2.2": "/api/v2/"}
	if !maps.Equal(doc, want) {
		t.Fatalf("document %v, want %v", doc, want)
	}
	if got := tfe.DiscoveryServices(); !maps.Equal(got, want) {
		t.Fatalf("DiscoveryServices() = %v, want %v", got, want)
	}

	// Clients resolve the service's URL against the document's URL, as
	// Terraform's svchost/disco does: scheme and host are the client's.
	base, _ := url.Parse(srv.URL + tfe.DiscoveryPath)
	ref, _ := url.Parse(doc["tfe.v2.2"])
	if got := base.ResolveReference(ref).String(); got != srv.URL+"/api/v2/" {
		t.Fatalf("tfe.v2.2 resolves to %s, want %s/api/v2/", got, srv.URL)
	}

	// Only GET (and HEAD, which ServeMux adds) is served.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+tfe.DiscoveryPath, nil)
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d, want 405", resp.StatusCode)
	}
}
