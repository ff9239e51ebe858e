package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// BenchmarkRequestLog: the request log's line for one request, made by
// hand (requestLog) and, as the yardstick, by slog's text handler with
// the same values (what the server did before).
func BenchmarkRequestLog(b *testing.B) {
	op := &keel.Op{Name: requestOp, Resource: "PUT /v1/secret/bench/key-000123", Principal: keel.Principal{ID: "root"},
		Start: time.Now(), Duration: 87 * time.Microsecond, Output: &httpResult{Status: 204}}
	b.Run("by=hand", func(b *testing.B) {
		rl := requestLog{w: io.Discard, stamps: new(stamps)}
		b.ReportAllocs()
		for b.Loop() {
			rl.End(context.Background(), op)
		}
	})
	b.Run("by=slog", func(b *testing.B) {
		l := slog.New(slog.NewTextHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "PUT"), slog.String("path", "/v1/secret/bench/key-000123"),
				slog.Int("status", 204), slog.Int64("bytes", 0), slog.Duration("duration", op.Duration), slog.String("principal", "root"))
		}
	})
}
