package vault_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkKVRead is the kv read path of the adapter as a server serves
// it: a GET of a secret through the test server's handler (the token's
// principal put in the context, then the mux), without the network.
func BenchmarkKVRead(b *testing.B) {
	e := newEnv(b, memstore.New(nil))
	if err := e.client(b, rootToken).KVv1("secret").Put(context.Background(), "app/db", map[string]any{"user": "ada", "password": "s3cr3t"}); err != nil {
		b.Fatal(err)
	}
	h := e.srv.Config.Handler
	for _, header := range []struct{ name, value string }{
		{vault.HeaderSecretsToken, rootToken},
		{vault.HeaderVaultToken, rootToken},
		{vault.HeaderAuthorization, "Bearer " + rootToken},
	} {
		b.Run("header="+header.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/secret/app/db", nil)
			req.Header.Set(header.name, header.value)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
