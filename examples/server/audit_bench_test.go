package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelhq/keel/internal/keeltest"
)

// BenchmarkAuditKVWrite is a kv write through the server's whole handler
// (token check, request log, limits, audit, the Vault adapter, the memory
// store), without the network: with no audit device, then with one file
// device, side by side in one run. cpu-ns/op is the process's CPU time per
// write (user and system), what a busy machine does not inflate.
func BenchmarkAuditKVWrite(b *testing.B) {
	const token = "bench-root-token"
	var handler http.Handler
	ts := start(b, hooks{handler: func(h http.Handler) { handler = h }}, "-data", "memory", "-root-token", token)
	_ = ts
	do := func(method, path, body string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("X-Vault-Token", token)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	write := func(b *testing.B) {
		b.ReportAllocs()
		cpu := keeltest.CPUTime()
		for b.Loop() {
			if code, body := do(http.MethodPut, "/v1/secret/app", `{"password":"hunter2","user":"app"}`); code != http.StatusNoContent {
				b.Fatalf("kv write answered %d: %s", code, body)
			}
		}
		b.ReportMetric(float64(keeltest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	b.Run("devices=0", write)
	logPath := filepath.Join(b.TempDir(), "audit.log")
	if code, body := do(http.MethodPut, "/v1/sys/audit/file", `{"type":"file","options":{"file_path":"`+logPath+`"}}`); code != http.StatusNoContent {
		b.Fatalf("enable answered %d: %s", code, body)
	}
	b.Run("devices=1", write)
}
