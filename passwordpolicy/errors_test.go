package passwordpolicy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestErrorMessagesPrefix: the errors of failing operations start with
// "passwordpolicy: " exactly once, and keep their kind.
func TestErrorMessagesPrefix(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	p, err := passwordpolicy.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	denied, err := passwordpolicy.New(store, &passwordpolicy.Options{Authorizer: &denyAll{}})
	if err != nil {
		t.Fatal(err)
	}
	// A stored text that no longer parses, and a record that is not JSON.
	err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("broken", []byte(`{"policy":"length = 1"}`)); err != nil {
			return err
		}
		return tx.Put("garbled", []byte(`not json`))
	})
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		call func() error
		kind error
	}{
		{"New nil store", func() error { _, err := passwordpolicy.New(nil, nil); return err }, keel.KindInvalid},
		{"Parse bad HCL", func() error { _, err := passwordpolicy.Parse("{"); return err }, keel.KindInvalid},
		{"Parse bad policy", func() error { _, err := passwordpolicy.Parse("length = 1"); return err }, keel.KindInvalid},
		{"Put bad HCL", func() error { return p.Put(ctx, "x", `length = "`) }, keel.KindInvalid},
		{"Put bad name", func() error { return p.Put(ctx, "bad name", digits8) }, keel.KindInvalid},
		{"Get missing", func() error { _, err := p.Get(ctx, "missing"); return err }, keel.KindNotFound},
		{"Get garbled", func() error { _, err := p.Get(ctx, "garbled"); return err }, keel.KindInternal},
		{"Delete bad name", func() error { return p.Delete(ctx, "") }, keel.KindInvalid},
		{"Generate missing", func() error { _, err := p.Generate(ctx, "missing"); return err }, keel.KindNotFound},
		{"Generate stored text that no longer parses", func() error { _, err := p.Generate(ctx, "broken"); return err }, keel.KindInvalid},
		{"GenerateUnchecked missing", func() error { _, err := p.GenerateUnchecked(ctx, "missing"); return err }, keel.KindNotFound},
		{"Put forbidden", func() error { return denied.Put(ctx, "x", digits8) }, keel.KindForbidden},
		{"Get forbidden", func() error { _, err := denied.Get(ctx, "broken"); return err }, keel.KindForbidden},
		{"Delete forbidden", func() error { return denied.Delete(ctx, "broken") }, keel.KindForbidden},
		{"List forbidden", func() error { _, err := denied.List(ctx, keel.ListRequest{}); return err }, keel.KindForbidden},
		{"Generate forbidden", func() error { _, err := denied.Generate(ctx, "broken"); return err }, keel.KindForbidden},
		{"List canceled", func() error { _, err := p.List(canceled, keel.ListRequest{}); return err }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "passwordpolicy: ") || strings.Count(msg, "passwordpolicy: ") != 1 {
				t.Fatalf("message %q: want %q exactly once, at the start", msg, "passwordpolicy: ")
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v: want %v", err, tc.kind)
			}
		})
	}
}
