package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/telemetry"
)

// TestLogToWritesOneLinePerOperation: a line per operation, at a level
// that follows its outcome, and never the data it carried.
func TestLogToWritesOneLinePerOperation(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := kv.New(memstore.New(nil), "secret", &kv.Options{Observer: telemetry.LogTo(log)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice"})
	if err := e.Write(ctx, "app/db", map[string]any{"password": "hunter2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Read(ctx, "missing"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{
		`level=DEBUG msg=kv.Write resource=secret/app/db principal=alice outcome=ok`,
		`level=DEBUG msg=kv.Read resource=secret/missing principal=alice outcome=not_found`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s\nwant it to hold %s", i, lines[i], want)
		}
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Errorf("the log holds the data written:\n%s", buf.String())
	}
	if telemetry.LogTo(nil) != nil {
		t.Error("LogTo(nil) is not nil")
	}
}

// TestLogToLevels: a store that cannot be reached is a warning, a broken
// invariant an error.
func TestLogToLevels(t *testing.T) {
	var buf bytes.Buffer
	o := telemetry.LogTo(slog.New(slog.NewTextHandler(&buf, nil)))
	for _, err := range []error{keel.KindUnavailable, keel.KindInternal, keel.KindNotFound, nil} {
		_, op, _ := keel.Begin(context.Background(), o, nil, "x.Op", "r", nil)
		op.End(nil, err)
	}
	got := buf.String()
	if !strings.Contains(got, "level=WARN msg=x.Op") || !strings.Contains(got, "level=ERROR msg=x.Op") || strings.Count(got, "\n") != 2 {
		t.Errorf("at the default level (info):\n%s\nwant one WARN and one ERROR line", got)
	}
}
