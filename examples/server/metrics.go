package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/telemetry"
)

// telemetryOf builds the server's telemetry: the operations of the mount
// table and its lease manager measured into a Prometheus registry, served
// at /v1/sys/metrics?format=prometheus (registerMetrics), and traced over
// OTLP when the environment names a collector (OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, read by the OTLP exporter with
// its other OTEL_* variables). The providers are shut down with the
// server.
func telemetryOf(ctx context.Context, d *deps) error {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return err
	}
	traced := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	meters := meterProvider(exporter, traced)
	d.onClose(func() error { return meters.Shutdown(context.Background()) })
	opts := &telemetry.Options{MeterProvider: meters}
	if traced {
		spans, err := otlptracegrpc.New(ctx)
		if err != nil {
			return err
		}
		tracer := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans))
		d.onClose(func() error { return tracer.Shutdown(context.Background()) })
		opts.TracerProvider = tracer
	}
	tel, err := telemetry.New(opts)
	if err != nil {
		return err
	}
	d.telemetry = tel
	d.metrics = promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	return nil
}

// meterProvider returns the server's MeterProvider over reader. It keeps
// exemplars (the sampled span of a measurement) only when the server
// traces: without a tracer there is no span to name, and the Prometheus
// text format it serves carries none, so no measurement is offered for one.
func meterProvider(reader sdkmetric.Reader, traced bool) *sdkmetric.MeterProvider {
	opts := []sdkmetric.Option{sdkmetric.WithReader(reader)}
	if !traced {
		opts = append(opts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	}
	return sdkmetric.NewMeterProvider(opts...)
}

// watchLeases adds the lease gauges of the mount table's lease manager,
// counted as the root principal.
func watchLeases(d *deps) error {
	stop, err := d.telemetry.WatchLeases(d.mounts.Leases(), rootPrincipal(), 0)
	if err != nil {
		return err
	}
	d.onClose(stop)
	return nil
}

// registerMetrics serves Vault's /v1/sys/metrics in the Prometheus text
// format, to callers with read on "sys/metrics" (as Vault, which asks for
// a token unless told otherwise). Vault answers JSON without format=;
// keel serves only the Prometheus format and refuses other ones.
func registerMetrics(mux *routes, d *deps) {
	mux.HandleFunc("GET /v1/sys/metrics", func(w http.ResponseWriter, r *http.Request) {
		if err := keel.Authorize(r.Context(), d.authorizer, keel.CapRead, "sys/metrics"); err != nil {
			status := http.StatusForbidden
			if !errors.Is(err, keel.KindForbidden) {
				status = http.StatusServiceUnavailable
			}
			refuse(w, r, status, "permission denied")
			return
		}
		if f := r.URL.Query().Get("format"); f != "prometheus" {
			refuse(w, r, http.StatusBadRequest, `format: only "prometheus" is served (got "`+f+`")`)
			return
		}
		d.metrics.ServeHTTP(w, r)
	})
}
