package passwordpolicy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage/memstore"
)

// TestGeneratedPasswordIsSecretToObservers: a generation is reported with
// its password as Output, marked secret, so that Redact hides it.
func TestGeneratedPasswordIsSecretToObservers(t *testing.T) {
	ctx := context.Background()
	rec := &oprecord.Recorder{}
	p, err := passwordpolicy.New(memstore.New(nil), &passwordpolicy.Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Put(ctx, "simple", `length = 20
rule "charset" { charset = "abcdefghij" }`); err != nil {
		t.Fatal(err)
	}
	pw, err := p.Generate(ctx, "simple")
	if err != nil {
		t.Fatal(err)
	}
	ops := rec.Named("passwordpolicy.Generate")
	if len(ops) != 1 || ops[0].Resource != "simple" {
		t.Fatalf("Generate reported as %+v", ops)
	}
	shown := keel.Redact(ops[0].Output, func(string) string { return "HIDDEN" })
	if m, ok := shown.(map[string]any); !ok || m["Password"] != "HIDDEN" {
		t.Errorf("the generated password through Redact: %#v", shown)
	}
	if raw := keel.Redact(ops[0].Output, nil).(map[string]any); raw["Password"] != pw || strings.Contains(ops[0].Name, pw) {
		t.Errorf("Output does not hold the password generated")
	}
	if n := len(rec.Named("passwordpolicy.GenerateUnchecked")); n != 0 {
		t.Errorf("Generate reported a nested GenerateUnchecked %d times", n)
	}
}
