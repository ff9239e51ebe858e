package ldapengine

import (
	"strconv"
	"strings"
	"testing"
	"time"
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
