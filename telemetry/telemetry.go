package telemetry

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/lease"
)

// scope is the instrumentation scope of keel's meters and tracers.
const scope = "github.com/keelhq/keel"

// Options configure a Telemetry. A nil *Options means no metrics and no
// traces.
type Options struct {
	// MeterProvider makes the instruments of the operation metrics and
	// of the lease gauges. Nil: no metrics.
	MeterProvider metric.MeterProvider
	// TracerProvider makes one span per operation. Nil: no traces.
	TracerProvider trace.TracerProvider
}

// Telemetry is a keel.Observer that measures and traces operations with
// OpenTelemetry. Create one with New; it is safe for concurrent use.
type Telemetry struct {
	meter    metric.Meter // nil: no metrics
	duration metric.Float64Histogram
	tracer   trace.Tracer // nil: no traces

	// attrs holds the record options of the histogram, one attribute
	// set per operation and outcome, made once each: a map read without
	// a lock and replaced by a copy under mu when an entry is added, so
	// that a measurement allocates nothing of its own (a sync.Map boxes
	// its key, and a variadic call makes its slice).
	attrs atomic.Pointer[map[outcome][]metric.RecordOption]
	mu    sync.Mutex
}

// outcome keys the attribute sets of the histogram, made once each.
type outcome struct {
	name string
	kind keel.Kind
}

// New returns a Telemetry that records to the providers of opts. It fails
// only when an instrument cannot be made.
func New(opts *Options) (*Telemetry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	t := &Telemetry{}
	if o.TracerProvider != nil {
		t.tracer = o.TracerProvider.Tracer(scope)
	}
	if o.MeterProvider == nil {
		return t, nil
	}
	t.meter = o.MeterProvider.Meter(scope)
	var err error
	t.duration, err = t.meter.Float64Histogram(OperationDuration,
		metric.WithUnit("s"),
		metric.WithDescription("Time keel's operations took, by operation and outcome."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w: %w", OperationDuration, err, keel.KindInternal)
	}
	return t, nil
}

// The names of the instruments, in OpenTelemetry's dotted form (a
// Prometheus exporter writes them with underscores, as Vault's are).
const (
	// OperationDuration is a histogram of the operations' durations in
	// seconds, with the attributes "operation" (keel.Op.Name) and
	// "outcome" ("ok" for a success, else the keel.Kind of the error
	// with underscores: "not_found", "unavailable").
	OperationDuration = "keel.operation.duration"
	// LiveLeases is a gauge of the leases not yet revoked (Vault's).
	LiveLeases = "vault.expire.num_leases"
	// IrrevocableLeases is a gauge of the irrevocable leases (Vault's).
	IrrevocableLeases = "vault.expire.num_irrevocable_leases"
	// DueLeases is a gauge of the leases whose time has come and that
	// are not revoked yet.
	DueLeases = "keel.lease.due"
	// AuditRequestFailures and AuditResponseFailures are counters of the
	// request and response records an audit Broker failed to write
	// (Vault's).
	AuditRequestFailures  = "vault.audit.log_request_failure"
	AuditResponseFailures = "vault.audit.log_response_failure"
)

// Begin starts the operation's span, when there is a tracer.
func (t *Telemetry) Begin(ctx context.Context, op *keel.Op) (context.Context, error) {
	if t.tracer == nil {
		return ctx, nil
	}
	ctx, _ = t.tracer.Start(ctx, op.Name,
		trace.WithTimestamp(op.Start),
		trace.WithAttributes(attribute.String("keel.resource", op.Resource)))
	return ctx, nil
}

// End records the operation's duration and outcome, and ends its span.
func (t *Telemetry) End(ctx context.Context, op *keel.Op) {
	kind := keel.KindOf(op.Err)
	if t.duration != nil {
		t.duration.Record(ctx, op.Duration.Seconds(), t.attributes(op.Name, kind)...)
	}
	if t.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if op.Err != nil {
		span.SetStatus(codes.Error, op.Err.Error())
		span.SetAttributes(attribute.String("keel.outcome", kind.String()))
	}
	span.End(trace.WithTimestamp(op.Start.Add(op.Duration)))
}

func (t *Telemetry) attributes(name string, kind keel.Kind) []metric.RecordOption {
	key := outcome{name, kind}
	if m := t.attrs.Load(); m != nil {
		if a, ok := (*m)[key]; ok {
			return a
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.attrs.Load()
	if old != nil {
		if a, ok := (*old)[key]; ok {
			return a
		}
	}
	m := make(map[outcome][]metric.RecordOption, 1)
	if old != nil {
		maps.Copy(m, *old)
	}
	a := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
		attribute.String("operation", name),
		attribute.String("outcome", outcomeName(kind))))}
	m[key] = a
	t.attrs.Store(&m)
	return a
}

// WatchLeases reports the lease counts of m (lease.Manager.Count) as the
// gauges LiveLeases, IrrevocableLeases and DueLeases, counted at each
// collection as the principal as (it needs keel.CapRead on
// "sys/leases/count"), within timeout (0: 10 s). A count that fails
// reports nothing for that collection. The returned function stops the
// reports. Without a MeterProvider it does nothing.
func (t *Telemetry) WatchLeases(m *lease.Manager, as keel.Principal, timeout time.Duration) (stop func() error, err error) {
	if t.meter == nil {
		return func() error { return nil }, nil
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	live, err1 := t.meter.Int64ObservableGauge(LiveLeases, metric.WithDescription("Leases not yet revoked."))
	irr, err2 := t.meter.Int64ObservableGauge(IrrevocableLeases, metric.WithDescription("Leases the lease manager gave up revoking."))
	due, err3 := t.meter.Int64ObservableGauge(DueLeases, metric.WithDescription("Leases whose time has come, not revoked yet."))
	if err := firstErr(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("telemetry: lease gauges: %w: %w", err, keel.KindInternal)
	}
	reg, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(keel.WithPrincipal(ctx, as), timeout)
		defer cancel()
		c, err := m.Count(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(live, int64(c.Live))
		o.ObserveInt64(irr, int64(c.Irrevocable))
		o.ObserveInt64(due, int64(c.Due))
		return nil
	}, live, irr, due)
	if err != nil {
		return nil, fmt.Errorf("telemetry: lease gauges: %w: %w", err, keel.KindInternal)
	}
	return reg.Unregister, nil
}

// WatchAudit adds the counters AuditRequestFailures and
// AuditResponseFailures of b (audit.Broker.Failures), read at each
// collection, until stop is called.
func (t *Telemetry) WatchAudit(b *audit.Broker) (stop func() error, err error) {
	if t.meter == nil {
		return func() error { return nil }, nil
	}
	req, err1 := t.meter.Int64ObservableCounter(AuditRequestFailures, metric.WithDescription("Request records no audit device wrote."))
	resp, err2 := t.meter.Int64ObservableCounter(AuditResponseFailures, metric.WithDescription("Response records no audit device wrote."))
	if err := firstErr(err1, err2); err != nil {
		return nil, fmt.Errorf("telemetry: audit counters: %w: %w", err, keel.KindInternal)
	}
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		rq, rs := b.Failures()
		o.ObserveInt64(req, int64(rq))
		o.ObserveInt64(resp, int64(rs))
		return nil
	}, req, resp)
	if err != nil {
		return nil, fmt.Errorf("telemetry: audit counters: %w: %w", err, keel.KindInternal)
	}
	return reg.Unregister, nil
}

// outcomeName is the value of the attribute "outcome" of kind: "ok" for
// a success, else the kind's name with underscores ("not_found").
func outcomeName(kind keel.Kind) string {
	if kind == keel.KindNone {
		return "ok"
	}
	return strings.ReplaceAll(kind.String(), " ", "_")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
