package passwordpolicy_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keelhq/keel/passwordpolicy"
)

// FuzzParse checks that Parse never panics and
// that an accepted policy generates a password of its length that meets
// each rule's min-chars from its charset.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"length = 20\nrule \"charset\" {\n  charset = \"abcdefghijklmnopqrstuvwxyz\"\n  min-chars = 1\n}\n",
		"length = 4\nrule \"charset\" { charset = \"ab\" min-chars = 2 }\nrule \"charset\" { charset = \"01\" min-chars = 2 }",
		"length = 5\nrule \"charset\" { charset = \"a\" min-chars = 6 }",
		"length = 100\nrule \"charset\" { charset = \"é€😀\" min_chars = 50 }",
		"length = 3\nrule \"charset\" { charset = \"a\" }",
		"length = \"x\"",
		"rule \"other\" { }",
		"length = 8 rule \"charset\" { charset = \"\" }",
		"{",
		"{\"\\a\\0", // made the HCL library panic
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := passwordpolicy.Parse(text)
		if err != nil {
			return
		}
		if p.Length < 4 || p.Length > 100 || len(p.Rules) == 0 {
			t.Fatalf("accepted policy %+v from %q", p, text)
		}
		pw, err := p.Generate()
		if err != nil {
			t.Fatalf("Generate for %q: %v", text, err)
		}
		if got := utf8.RuneCountInString(pw); got != p.Length {
			t.Fatalf("password %q of %d characters, policy length %d (%q)", pw, got, p.Length, text)
		}
		for _, r := range p.Rules {
			n := 0
			for _, c := range pw {
				if strings.ContainsRune(r.Charset, c) {
					n++
				}
			}
			if n < r.MinChars {
				t.Fatalf("password %q has %d characters of %q, rule wants %d (%q)", pw, n, r.Charset, r.MinChars, text)
			}
		}
		if !p.Meets(pw) {
			t.Fatalf("password %q does not meet the policy that generated it (%q)", pw, text)
		}
	})
}
