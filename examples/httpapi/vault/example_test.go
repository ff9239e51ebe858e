package vault_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	// keel.AllowAll{}: everything is allowed, as asked for by name.
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults()})
	if err != nil {
		panic(err)
	}
	defer table.Close()
	h := vault.New(table, nil)
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/secret/app", strings.NewReader(`{"password":"s3cr3t","ttl":"1h"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("write:", resp.StatusCode)

	resp, err = http.Get(srv.URL + "/v1/secret/app")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("read:", resp.StatusCode, strings.Contains(string(body), `"data":{"password":"s3cr3t","ttl":"1h"}`), strings.Contains(string(body), `"lease_duration":3600`))
	// Output:
	// write: 204
	// read: 200 true true
}

// A program authenticates Vault's clients with a middleware: RequestToken
// reads the token (X-Secrets-Token, X-Vault-Token or Authorization:
// Bearer), the program finds its principal and puts it in the context.
func ExampleRequestToken() {
	principals := map[string]keel.Principal{
		"s3cr3t-token": {ID: "ci", DisplayName: "ci", Policies: []string{"deploy"}},
	}
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p, ok := principals[vault.RequestToken(r)]; ok {
				r = r.WithContext(keel.WithPrincipal(r.Context(), p))
			}
			next.ServeHTTP(w, r)
		})
	}
	table, err := mount.Open(context.Background(), memstore.New(nil), &mount.Options{Authorizer: keel.AllowAll{}})
	if err != nil {
		panic(err)
	}
	defer table.Close()
	mux := http.NewServeMux()
	vault.New(table, nil).Register(mux)
	srv := httptest.NewServer(authenticate(mux))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/auth/token/lookup-self", nil)
	req.Header.Set("X-Vault-Token", "s3cr3t-token") // what vault/api sends
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"display_name":"ci"`), strings.Contains(string(body), `"policies":["deploy"]`))
	// Output:
	// 200 true true
}
