package kv_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/storage/memstore"
)

func TestObserverIsToldOfEveryOperation(t *testing.T) {
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice"})
	rec := &oprecord.Recorder{}
	e := newEngine(t, memstore.New(nil), &kv.Options{Observer: rec})
	if err := e.Write(ctx, "app/db", map[string]any{"password": "hunter2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Read(ctx, "app/db"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.List(ctx, "app/", keel.ListRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, "app/db"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Read(ctx, "app/db"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("read after delete: %v", err)
	}
	ops := rec.Ended()
	var names []string
	for _, op := range ops {
		names = append(names, op.Name+" "+op.Resource+" "+keel.KindOf(op.Err).String())
		if op.Principal.ID != "alice" {
			t.Errorf("%s: principal %q, want alice", op.Name, op.Principal.ID)
		}
	}
	want := []string{
		"kv.Write secret/app/db " + keel.KindNone.String(),
		"kv.Read secret/app/db " + keel.KindNone.String(),
		"kv.List secret/app/ " + keel.KindNone.String(),
		"kv.Delete secret/app/db " + keel.KindNone.String(),
		"kv.Read secret/app/db " + keel.KindNotFound.String(),
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("operations:\n%q\nwant\n%q", names, want)
	}
	// The data written and read are secret: Redact hides every string.
	hash := func(s string) string { return "H" }
	for _, op := range ops[:2] {
		for _, v := range []any{op.Input, op.Output} {
			if v == nil {
				continue
			}
			red := keel.Redact(v, hash)
			if s := render(red); strings.Contains(s, "hunter2") {
				t.Errorf("%s: the password shows through Redact: %s", op.Name, s)
			}
		}
	}
	if got := render(keel.Redact(ops[1].Output, nil)); !strings.Contains(got, "hunter2") {
		t.Errorf("the read's Output does not hold the data read: %s", got)
	}
}

func TestRefusedOperationChangesNothing(t *testing.T) {
	ctx := context.Background()
	rec := &oprecord.Recorder{}
	store := memstore.New(nil)
	e := newEngine(t, store, &kv.Options{Observer: rec})
	if err := e.Write(ctx, "a", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	down := errors.New("audit device down")
	rec.Refuse(fmt.Errorf("%w: %w", down, keel.KindUnavailable))
	if err := e.Write(ctx, "a", map[string]any{"v": "2"}); !errors.Is(err, down) || keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("refused write: %v, want the refusal (Unavailable)", err)
	}
	if err := e.Delete(ctx, "a"); !errors.Is(err, down) {
		t.Fatalf("refused delete: %v", err)
	}
	rec.Refuse(nil)
	s, err := e.Read(ctx, "a")
	if err != nil || s.Data["v"] != "1" {
		t.Fatalf("after the refusals: %v %v, want the first write", s.Data, err)
	}
}

// render prints a redacted tree, to search it for a string.
func render(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				b.WriteString(k + "=")
				walk(x)
				b.WriteString(" ")
			}
		case []any:
			for _, x := range v {
				walk(x)
				b.WriteString(",")
			}
		case string:
			b.WriteString(v)
		}
	}
	walk(v)
	return b.String()
}
