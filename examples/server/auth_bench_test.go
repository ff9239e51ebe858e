package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/keelhq/keel"
)

// BenchmarkAuthenticate is the token check every request pays: the
// header lookup, the digest, the table, the principal in the context.
func BenchmarkAuthenticate(b *testing.B) {
	const root = "kr.benchmark-root-token"
	_, tokens, err := buildAuth(&config{}, root)
	if err != nil {
		b.Fatal(err)
	}
	h := authenticate(tokens, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := keel.PrincipalFrom(r.Context()); !ok {
			b.Fatal("anonymous")
		}
	}))
	for _, header := range []struct{ name, value string }{
		{"X-Secrets-Token", root},
		{"X-Vault-Token", root},
		{"Authorization", "Bearer " + root},
	} {
		b.Run("header="+header.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/secret/app/db", nil)
			req.Header.Set(header.name, header.value)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(nil, req)
			}
		})
	}
}
