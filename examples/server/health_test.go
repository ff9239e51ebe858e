package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	for _, tc := range []struct {
		name string
		data func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return "memory" }},
		{"bolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "keel.db") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			ts := start(t, hooks{}, "-data", data)
			before := time.Now().Unix()

			// No token, and an unknown one: health needs none.
			for _, headers := range [][]string{nil, {headerSecretsToken, "unknown"}} {
				status, body := ts.get("/v1/sys/health", headers...)
				if status != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", status, body)
				}
				checkHealthBody(t, body, before)
			}

			if err := ts.stop(); err != nil {
				t.Fatalf("serve: %v", err)
			}
			if data != "memory" {
				if _, err := os.Stat(data); err != nil {
					t.Errorf("the bolt file was not created: %v", err)
				}
			}
			if !strings.Contains(ts.stderr.String(), "path=/v1/sys/health status=200") {
				t.Errorf("no request log line for the health check:\n%s", ts.stderr)
			}
		})
	}
}

func checkHealthBody(t *testing.T, body []byte, notBefore int64) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"clock_skew_ms", "cluster_id", "cluster_name", "echo_duration_ms", "enterprise", "initialized",
		"performance_standby", "replication_dr_mode", "replication_performance_mode",
		"replication_primary_canary_age_ms", "sealed", "server_time_utc", "standby", "version"}; !slices.Equal(keys, want) {
		t.Errorf("fields %q, want %q", keys, want)
	}
	if got["initialized"] != true || got["sealed"] != false || got["standby"] != false {
		t.Errorf("initialized, sealed, standby = %v, %v, %v; want true, false, false", got["initialized"], got["sealed"], got["standby"])
	}
	now, ok := got["server_time_utc"].(float64)
	if !ok || int64(now) < notBefore || int64(now) > time.Now().Unix() || now != float64(int64(now)) {
		t.Errorf("server_time_utc = %v, want whole Unix seconds between %d and now", got["server_time_utc"], notBefore)
	}
	if v, ok := got["version"].(string); !ok || v == "" {
		t.Errorf("version = %v, want a non-empty string", got["version"])
	}
}

func TestHealthHEAD(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory")
	resp, err := client.Head(ts.url + "/v1/sys/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: status %d, Content-Type %q; want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
