package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel/internal/keeltest"
)

// BenchmarkAuditKVWriteHTTP is a kv write over a real connection: the
// server on a loopback listener, 8 clients of one keep-alive transport,
// with no audit device, then with one file device, side by side in one
// run. cpu-ns/op is the process's CPU time per write, the clients' (net/http)
// included: a lower bound of the server's ratio.
func BenchmarkAuditKVWriteHTTP(b *testing.B) {
	const token = "bench-root-token"
	ts := start(b, hooks{}, "-data", "memory", "-root-token", token)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	do := func(method, path, body string) (int, string, error) {
		req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("X-Vault-Token", token)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got), err
	}
	var worker atomic.Int64
	write := func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(4) // 8 clients on 2 cores
		cpu := keeltest.CPUTime()
		b.RunParallel(func(pb *testing.PB) {
			path := "/v1/secret/app-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				code, body, err := do(http.MethodPut, path, `{"password":"hunter2","user":"app"}`)
				if err != nil || code != http.StatusNoContent {
					b.Errorf("kv write answered %d, %v: %s", code, err, body)
					return
				}
			}
		})
		b.ReportMetric(float64(keeltest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	b.Run("devices=0", write)
	logPath := filepath.Join(b.TempDir(), "audit.log")
	if code, body, err := do(http.MethodPut, "/v1/sys/audit/file", `{"type":"file","options":{"file_path":"`+logPath+`"}}`); err != nil || code != http.StatusNoContent {
		b.Fatalf("enable answered %d, %v: %s", code, err, body)
	}
	b.Run("devices=1", write)
}
