package passwordpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/passwordpolicy"
)

func TestMain(m *testing.M) { everystore.Main(m) }

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

const digits8 = "length = 8\nrule \"charset\" {\n charset = \"0123456789\"\n min-chars = 8\n}\n"

func TestParseRules(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		ok   bool
	}{
		"valid":                {digits8, true},
		"min_chars spelling":   {"length = 4\nrule \"charset\" { charset = \"ab\" min_chars = 4 }", true},
		"length below 4":       {"length = 3\nrule \"charset\" { charset = \"a\" }", false},
		"length above 100":     {"length = 101\nrule \"charset\" { charset = \"a\" }", false},
		"no length":            {"rule \"charset\" { charset = \"a\" }", false},
		"no rule":              {"length = 8", false},
		"other rule type":      {"length = 8\nrule \"other\" { }", false},
		"empty charset":        {"length = 8\nrule \"charset\" { charset = \"\" }", false},
		"negative min-chars":   {"length = 8\nrule \"charset\" { charset = \"a\" min-chars = -1 }", false},
		"impossible min-chars": {"length = 4\nrule \"charset\" { charset = \"a\" min-chars = 5 }", false},
		"unknown attribute":    {"length = 8\nrule \"charset\" { charset = \"a\" max-chars = 1 }", false},
		"not HCL":              {"{", false},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := passwordpolicy.Parse(tc.text)
			if tc.ok {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if !errors.Is(err, keel.KindInvalid) {
				t.Fatalf("Parse = %+v, %v; want an error of kind KindInvalid", p, err)
			}
			if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != "Policy" {
				t.Fatalf("field errors %v, want field \"Policy\"", fe)
			}
		})
	}
}

func TestGenerateAlphanumeric(t *testing.T) {
	pw, err := passwordpolicy.GenerateAlphanumeric(64)
	if err != nil {
		t.Fatal(err)
	}
	if utf8.RuneCountInString(pw) != 64 || strings.Trim(pw, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		t.Fatalf("password %q is not 64 letters and digits", pw)
	}
	if pw, err := passwordpolicy.GenerateAlphanumeric(-1); pw != "" || err != nil {
		t.Fatalf("GenerateAlphanumeric(-1) = %q, %v; want \"\", nil", pw, err)
	}
}

func TestNewNeedsStore(t *testing.T) {
	if _, err := passwordpolicy.New(nil, nil); !errors.Is(err, keel.KindInvalid) {
		t.Fatalf("New(nil) error %v, want KindInvalid", err)
	}
}

// denyAll refuses every right and records what was asked.
type denyAll struct{ asked []string }

func (d *denyAll) Authorize(_ context.Context, _ keel.Principal, c keel.Capability, resource string) error {
	d.asked = append(d.asked, string(c)+" "+resource)
	return fmt.Errorf("%s on %s: %w", c, resource, keel.KindForbidden)
}

func TestPoliciesLifecycle(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		p, err := passwordpolicy.New(open(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Get(ctx, "digits"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("Get of a missing policy: %v, want KindNotFound", err)
		}
		if _, err := p.GenerateUnchecked(ctx, "digits"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("GenerateUnchecked of a missing policy: %v, want KindNotFound", err)
		}
		if err := p.Put(ctx, "bad name", digits8); !errors.Is(err, keel.KindInvalid) {
			t.Fatalf("Put with a bad name: %v, want KindInvalid", err)
		}
		if err := p.Put(ctx, "digits", "length = 1"); !errors.Is(err, keel.KindInvalid) {
			t.Fatalf("Put of a bad policy: %v, want KindInvalid", err)
		}
		if err := p.Put(ctx, "digits", digits8); err != nil {
			t.Fatal(err)
		}
		if text, err := p.Get(ctx, "digits"); err != nil || text != digits8 {
			t.Fatalf("Get = %q, %v; want the text put", text, err)
		}
		for _, gen := range []func(context.Context, string) (string, error){p.Generate, p.GenerateUnchecked} {
			pw, err := gen(ctx, "digits")
			if err != nil || len(pw) != 8 || strings.Trim(pw, "0123456789") != "" {
				t.Fatalf("generated %q, %v; want 8 digits", pw, err)
			}
		}
		if page, err := p.List(ctx, keel.ListRequest{}); err != nil || len(page.Items) != 1 || page.Items[0] != "digits" || page.Next != "" {
			t.Fatalf("List = %v, %v", page, err)
		}
		if err := p.Delete(ctx, "digits"); err != nil {
			t.Fatal(err)
		}
		if err := p.Delete(ctx, "digits"); err != nil {
			t.Fatalf("Delete of a missing policy: %v", err)
		}
		if page, err := p.List(ctx, keel.ListRequest{}); err != nil || len(page.Items) != 0 || page.Next != "" {
			t.Fatalf("List after Delete = %v, %v", page, err)
		}
	})
}

func TestPoliciesRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		store := open(t)
		unrestricted, err := passwordpolicy.New(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := unrestricted.Put(ctx, "digits", digits8); err != nil {
			t.Fatal(err)
		}
		auth := &denyAll{}
		p, err := passwordpolicy.New(store, &passwordpolicy.Options{Authorizer: auth})
		if err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]struct {
			call func() error
			want string
		}{
			"put":      {func() error { return p.Put(ctx, "digits", digits8) }, "update sys/policies/password/digits"},
			"get":      {func() error { _, err := p.Get(ctx, "digits"); return err }, "read sys/policies/password/digits"},
			"delete":   {func() error { return p.Delete(ctx, "digits") }, "delete sys/policies/password/digits"},
			"list":     {func() error { _, err := p.List(ctx, keel.ListRequest{}); return err }, "list sys/policies/password/"},
			"generate": {func() error { _, err := p.Generate(ctx, "digits"); return err }, "read sys/policies/password/digits/generate"},
		} {
			t.Run(name, func(t *testing.T) {
				auth.asked = nil
				if err := tc.call(); !errors.Is(err, keel.KindForbidden) {
					t.Fatalf("error %v, want KindForbidden", err)
				}
				if len(auth.asked) != 1 || auth.asked[0] != tc.want {
					t.Fatalf("asked %v, want [%s]", auth.asked, tc.want)
				}
			})
		}
		auth.asked = nil
		if _, err := p.GenerateUnchecked(ctx, "digits"); err != nil {
			t.Fatalf("GenerateUnchecked: %v", err)
		}
		if len(auth.asked) != 0 {
			t.Fatalf("GenerateUnchecked asked %v, want nothing", auth.asked)
		}
	})
}
