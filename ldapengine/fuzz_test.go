package ldapengine

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseDuration checks that ParseDuration never panics, accepts no
// negative duration, and reads an integer string as seconds.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"", "0", "90", "-1", "1h30m", "90s", "1.5s", "5", " 42 ", "+7", "-0",
		"9223372036", "9223372037", "99999999999999999999", "1µs", "2562047h", "abc", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration("rotation_period", s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if perr != nil {
			return
		}
		inRange := n >= 0 && n <= int64(1<<63-1)/int64(time.Second)
		switch {
		case inRange && err != nil:
			t.Fatalf("ParseDuration(%q): %v, want %d seconds", s, err, n)
		case inRange && d != time.Duration(n)*time.Second:
			t.Fatalf("ParseDuration(%q) = %v, want %d seconds", s, d, n)
		case !inRange && err == nil:
			t.Fatalf("ParseDuration(%q) = %v, want an error", s, d)
		}
	})
}

// FuzzParsePasswordPolicy checks that ParsePasswordPolicy never panics and
// that an accepted policy generates a password of its length that meets
// each rule's min-chars from its charset.
func FuzzParsePasswordPolicy(f *testing.F) {
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
		p, err := ParsePasswordPolicy(text)
		if err != nil {
			return
		}
		if p.Length < MinPolicyLength || p.Length > MaxPolicyLength || len(p.Rules) == 0 {
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
	})
}
