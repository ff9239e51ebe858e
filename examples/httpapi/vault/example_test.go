package vault_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	leases := lease.New(store, nil)
	h, err := vault.New(ctx, store, leases, nil) // no Authorizer: everything is allowed
	if err != nil {
		panic(err)
	}
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
