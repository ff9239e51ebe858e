package vault_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkKVWrite is the kv write path of the adapter as a server serves
// it: a PUT of the 3-string secret of bench/vaultload and bench/floorbench
// (as vault/api encodes it) through the test server's handler, without
// the network.
func BenchmarkKVWrite(b *testing.B) {
	e := newEnv(b, memstore.New(nil))
	h := e.srv.Config.Handler
	const body = `{"password":"p4ssw0rd-0123456789abcdef","url":"https://db.internal.example:5432/app","username":"svc-app-01"}` + "\n"
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPut, "/v1/secret/app/db", strings.NewReader(body))
		req.Header.Set(vault.HeaderVaultToken, rootToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
