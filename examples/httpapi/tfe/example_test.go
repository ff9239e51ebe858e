package tfe_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	store := memstore.New(nil)
	defer store.Close()
	// Each service keeps its keys in a view of the store; New registers
	// the policies with the catalog, whose organization deletion then
	// deletes them too.
	catalog, err := project.New(storage.Sub(store, "project/"), nil) // no Authorizer: everything is allowed
	if err != nil {
		panic(err)
	}
	policies, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Organizations: catalog})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	tfe.New(catalog, policies, nil).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(path, body string) *http.Response {
		resp, err := http.Post(srv.URL+path, "application/vnd.api+json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := post("/api/v2/organizations", `{"data":{"type":"organizations","attributes":{"name":"acme"}}}`)
	resp.Body.Close()
	fmt.Println(resp.Status)

	resp = post("/api/v2/organizations/acme/projects", `{"data":{"type":"projects","attributes":{"name":"x"}}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(b)))
	// Output:
	// 201 Created
	// 422 {"errors":[{"status":"422","title":"invalid attribute","detail":"must be 3 to 36 characters","source":{"pointer":"/data/attributes/name"}}]}
}
