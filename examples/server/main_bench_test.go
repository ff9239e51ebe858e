package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
)

// BenchmarkKVPath drives the server's whole handler (token check, request
// log and telemetry, limits, audit middleware, routes) with kv writes,
// reads and deletes of the 3-string secret of bench/vaultload, without the
// network: the part of a request's cost that is keel's (issue 32).
func BenchmarkKVPath(b *testing.B) {
	const token = "bench-root-token"
	var handler http.Handler
	start(b, hooks{handler: func(h http.Handler) { handler = h }}, "-data", "memory", "-root-token", token)
	const secret = `{"password":"0123456789abcdef","user":"bench-user","note":"a secret written by vaultload"}`
	do := func(method, path string, body string, want int) {
		var req *http.Request
		if body != "" {
			req = httptest.NewRequest(method, path, strings.NewReader(body))
		} else {
			req = httptest.NewRequest(method, path, nil)
		}
		req.Header.Set("X-Vault-Token", token)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s answered %d: %s", method, path, rec.Code, rec.Body)
		}
	}
	// The yardstick: what httptest and the loop cost, with a handler that
	// keeps the value in a map behind a mutex, as bench/floor does.
	var mu sync.Mutex
	bare := map[string][]byte{}
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || !json.Valid(body) {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		mu.Lock()
		bare[r.URL.Path] = body
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	const keys = 1000
	path := func(i int) string { return "/v1/secret/bench/key-" + strconv.Itoa(i%keys) }
	run := func(method, body string, want int) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			cpu := keeltest.CPUTime()
			i := 0
			for b.Loop() {
				do(method, path(i), body, want)
				i++
			}
			b.ReportMetric(float64(keeltest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
		}
	}
	b.Run("op=write/handler=bare", func(b *testing.B) {
		keel := handler
		handler = floor
		defer func() { handler = keel }()
		run(http.MethodPut, secret, http.StatusNoContent)(b)
	})
	b.Run("op=write", run(http.MethodPut, secret, http.StatusNoContent))
	for i := range keys {
		do(http.MethodPut, path(i), secret, http.StatusNoContent)
	}
	b.Run("op=read", run(http.MethodGet, "", http.StatusOK))
	b.Run("op=delete", func(b *testing.B) {
		b.ReportAllocs()
		var cpu time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			do(http.MethodPut, path(i), secret, http.StatusNoContent)
			b.StartTimer()
			c := keeltest.CPUTime()
			do(http.MethodDelete, path(i), "", http.StatusNoContent)
			cpu += keeltest.CPUTime() - c
			i++
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	})
}
