package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/telemetry"
)

// collect gathers what reader holds: the histogram's counts by operation
// and outcome, and the gauges' last values by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) (counts map[string]uint64, gauges map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts, gauges = map[string]uint64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value(attribute.Key("operation"))
					out, _ := p.Attributes.Value(attribute.Key("outcome"))
					counts[op.AsString()+" "+out.AsString()] += p.Count
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					gauges[m.Name] = p.Value
				}
			}
		}
	}
	return counts, gauges
}

func TestOperationsAreCountedByOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if err := e.Write(ctx, "a", map[string]any{"v": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Read(ctx, "missing"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatal(err)
	}
	counts, _ := collect(t, reader)
	if counts["kv.Write ok"] != 3 || counts["kv.Read not_found"] != 1 || len(counts) != 2 {
		t.Errorf("counts = %v, want 3 kv.Write ok and 1 kv.Read not_found", counts)
	}
}

func TestEachOperationIsASpan(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tel, err := telemetry.New(&telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})
	if err != nil {
		t.Fatal(err)
	}
	clock := keel.NewFakeClock(time.Unix(1000, 0))
	e, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: tel, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = e.Write(ctx, "a", map[string]any{"v": "x"})
	_, _ = e.Read(ctx, "missing")
	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans, want 2", len(ended))
	}
	if ended[0].Name() != "kv.Write" || ended[0].Status().Code == codes.Error {
		t.Errorf("first span %q status %v, want kv.Write without error", ended[0].Name(), ended[0].Status())
	}
	if ended[1].Name() != "kv.Read" || ended[1].Status().Code != codes.Error {
		t.Errorf("second span %q status %v, want kv.Read with an error", ended[1].Name(), ended[1].Status())
	}
	if !ended[0].StartTime().Equal(time.Unix(1000, 0)) {
		t.Errorf("the span starts at %v, not at the operation's start by the service's clock", ended[0].StartTime())
	}
}

func TestLeaseGaugesFollowIssueAndRevoke(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	clock := keel.NewFakeClock(time.Unix(1000, 0))
	m, err := lease.New(storage.Sub(memstore.New(nil), "lease/"), &lease.Options{Clock: clock, Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	iss, err := m.Register(lease.Mount{Path: "kv/"})
	if err != nil {
		t.Fatal(err)
	}
	iss.SetRevoker(lease.RevokerFunc(func(context.Context, lease.Lease) error { return nil }))
	stop, err := tel.WatchLeases(m, keel.Principal{ID: "metrics"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		l, err := iss.Issue(ctx, lease.IssueRequest{Path: "kv/x", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.ID)
		if _, g := collect(t, reader); g[telemetry.LiveLeases] != int64(i+1) {
			t.Fatalf("after %d issued: gauges %v", i+1, g)
		}
	}
	if err := m.Revoke(ctx, ids[0], true); err != nil {
		t.Fatal(err)
	}
	counts, g := collect(t, reader)
	if g[telemetry.LiveLeases] != 2 || g[telemetry.DueLeases] != 0 || g[telemetry.IrrevocableLeases] != 0 {
		t.Fatalf("after one revoked: gauges %v", g)
	}
	if counts["lease.Issue ok"] != 3 || counts["lease.Revoke ok"] != 1 {
		t.Errorf("counts %v", counts)
	}
	clock.Advance(time.Minute)
	if _, g := collect(t, reader); g[telemetry.DueLeases] != 2 {
		t.Fatalf("two due: gauges %v", g)
	}
	if _, err := m.Step(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	counts, g = collect(t, reader)
	if g[telemetry.LiveLeases] != 0 || counts["lease.Expire ok"] != 2 {
		t.Fatalf("after expiry: gauges %v counts %v", g, counts)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestAuditFailuresAreCounted: the records an audit Broker fails to write
// are counted, by type, under Vault's names.
func TestAuditFailuresAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	b := audit.NewBroker(nil)
	stop, err := tel.WatchAudit(b)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	salt, err := audit.NewSalt(audit.GenerateSalt())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Enable("broken/", brokenDevice{}, salt); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, typ := range []string{audit.TypeRequest, audit.TypeRequest, audit.TypeResponse} {
		if err := b.Record(ctx, &audit.Record{Type: typ, Request: &audit.Request{Operation: "read", Path: "secret/x"}}); err == nil {
			t.Fatal("a broken device recorded")
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range d.DataPoints {
					got[m.Name] += p.Value
				}
			}
		}
	}
	if got[telemetry.AuditRequestFailures] != 2 || got[telemetry.AuditResponseFailures] != 1 {
		t.Fatalf("counters %v, want 2 request and 1 response failures", got)
	}
}

type brokenDevice struct{}

func (brokenDevice) Write(*audit.Record) error { return errors.New("disk full") }

// A measurement allocates nothing of the Telemetry's own: the attribute
// sets and the options that carry them are made once per operation and
// outcome (issue 32: two measurements per request of the example server).
func TestMeasurementsAllocateNothingOfTheirOwn(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ok := &keel.Op{Name: "kv.Write", Resource: "secret/a", Duration: time.Millisecond}
	failed := &keel.Op{Name: "kv.Write", Resource: "secret/a", Duration: time.Millisecond, Err: keel.KindNotFound}
	tel.End(ctx, ok)
	tel.End(ctx, failed)
	// (keel.KindOf of a failure allocates errors.As's target: not the
	// Telemetry's.)
	allocs := testing.AllocsPerRun(200, func() { tel.End(ctx, ok) })
	if allocs != 0 {
		t.Errorf("End allocates %v times, want 0", allocs)
	}
	counts, _ := collect(t, reader)
	if counts["kv.Write ok"] != 202 || counts["kv.Write not_found"] != 1 {
		t.Errorf("counts = %v, want 202 ok and 1 not_found", counts)
	}
}
