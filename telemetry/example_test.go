package telemetry_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/telemetry"
)

// A kv engine measured: each write is one data point of the histogram of
// operation durations.
func Example() {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		panic(err)
	}
	secrets, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: tel})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_ = secrets.Write(ctx, "app/db", map[string]any{"password": "hunter2"})
	_ = secrets.Write(ctx, "app/db", map[string]any{"password": "hunter3"})

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			op, _ := p.Attributes.Value("operation")
			out, _ := p.Attributes.Value("outcome")
			fmt.Println(m.Name, op.AsString(), out.AsString(), p.Count)
		}
	}
	// Output: keel.operation.duration kv.Write ok 2
}
