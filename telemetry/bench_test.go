package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/telemetry"
)

// BenchmarkSeam: a kv write and read on a memory store, with no Observer
// (the yardstick: the seam is a nil check), with the OpenTelemetry metrics
// of a Telemetry, with metrics and a span per operation, and with the
// slog consumer at its default level (nothing written).
func BenchmarkSeam(b *testing.B) {
	meters := func() *telemetry.Telemetry {
		tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
		if err != nil {
			b.Fatal(err)
		}
		return tel
	}
	traced := func() *telemetry.Telemetry {
		tel, err := telemetry.New(&telemetry.Options{
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())),
		})
		if err != nil {
			b.Fatal(err)
		}
		return tel
	}
	for _, c := range []struct {
		name string
		obs  func() keel.Observer
	}{
		{"observer=none", func() keel.Observer { return nil }},
		{"observer=metrics", func() keel.Observer { return meters() }},
		{"observer=metrics+traces", func() keel.Observer { return traced() }},
		{"observer=log", func() keel.Observer { return telemetry.LogTo(slog.New(slog.NewTextHandler(io.Discard, nil))) }},
	} {
		e, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: c.obs()})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		data := map[string]any{"password": "hunter2", "user": "app"}
		if err := e.Write(ctx, "app/db", data); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/op=write", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := e.Write(ctx, "app/db", data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/op=read", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Read(ctx, "app/db"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
