package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/hashicorp/vault/api"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

// TestMetricsFollowLeases: /v1/sys/metrics?format=prometheus is read by a
// Prometheus text parser, and its live lease count rises by one for each
// leased read and falls by one for each revocation; the operations are
// counted by name and outcome, the server's requests among them. Without a token it is refused, as Vault's.
func TestMetricsFollowLeases(t *testing.T) {
	const token = "metrics-root-token"
	ts := start(t, hooks{}, "-data", "memory", "-root-token", token)
	c := vaultClient(t, ts, token)
	if err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Logical().Write("leased/app", map[string]any{"password": "p", "ttl": "1h"}); err != nil {
		t.Fatal(err)
	}
	scrape := func() map[string]float64 {
		t.Helper()
		status, body := ts.get("/v1/sys/metrics?format=prometheus", "X-Vault-Token", token)
		if status != http.StatusOK {
			t.Fatalf("metrics: %d %s", status, body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("the page is not the Prometheus text format: %v\n%s", err, body)
		}
		out := map[string]float64{}
		for name, f := range families {
			for _, m := range f.GetMetric() {
				key := name
				for _, l := range m.GetLabel() {
					key += " " + l.GetName() + "=" + l.GetValue()
				}
				switch {
				case m.GetGauge() != nil:
					out[key] = m.GetGauge().GetValue()
				case m.GetHistogram() != nil:
					out[key] = float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return out
	}
	const live = "vault_expire_num_leases"
	base := scrape()[live]
	var ids []string
	for i := range 3 {
		s, err := c.Logical().Read("leased/app")
		if err != nil || s.LeaseID == "" {
			t.Fatalf("leased read: %+v, %v", s, err)
		}
		ids = append(ids, s.LeaseID)
		if got := scrape()[live]; got != base+float64(i+1) {
			t.Fatalf("after %d leased reads: %s = %v, want %v", i+1, live, got, base+float64(i+1))
		}
	}
	for i, id := range ids {
		// sync: Vault queues a revocation unless told to wait for it.
		if err := c.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: id, Sync: true}); err != nil {
			t.Fatal(err)
		}
		if got := scrape()[live]; got != base+float64(len(ids)-i-1) {
			t.Fatalf("after %d revocations: %s = %v, want %v", i+1, live, got, base+float64(len(ids)-i-1))
		}
	}
	m := scrape()
	if got := m["keel_operation_duration_seconds operation=kv.Read outcome=ok"]; got < 3 {
		t.Errorf("kv.Read ok counted %v times, want at least 3 (metrics: %v)", got, m)
	}
	if got := m["keel_operation_duration_seconds operation=lease.Revoke outcome=ok"]; got != 3 {
		t.Errorf("lease.Revoke ok counted %v times, want 3", got)
	}
	if status, _ := ts.get("/v1/sys/metrics?format=prometheus"); status != http.StatusForbidden {
		t.Errorf("metrics without a token: %d, want 403", status)
	}
	if status, _ := ts.get("/v1/sys/metrics", "X-Vault-Token", token); status != http.StatusBadRequest {
		t.Errorf("metrics without format=prometheus: %d, want 400", status)
	}
	// The requests themselves are operations of the seam, by outcome.
	m = scrape()
	for outcome, least := range map[string]float64{"ok": 10, "forbidden": 1, "invalid": 1} {
		if got := m["keel_operation_duration_seconds operation=http.Request outcome="+outcome]; got < least {
			t.Errorf("http.Request %s counted %v times, want at least %v", outcome, got, least)
		}
	}
}

// TestExemplarsOnlyWhenTraced: the server's meters offer a measurement
// made under a sampled span as an exemplar only when the server traces;
// without a tracer no exemplar is kept (nor its filter's cost paid).
func TestExemplarsOnlyWhenTraced(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	for _, traced := range []bool{false, true} {
		reader := sdkmetric.NewManualReader()
		h, err := meterProvider(reader, traced).Meter("test").Float64Histogram("test.duration")
		if err != nil {
			t.Fatal(err)
		}
		h.Record(ctx, 0.5)
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		exemplars := 0
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					exemplars += len(dp.Exemplars)
				}
			}
		}
		if got := exemplars > 0; got != traced {
			t.Errorf("traced %v: %d exemplars kept", traced, exemplars)
		}
	}
}
