package vault

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// fuzzFields decodes a request body, {"v": raw}, as the adapter does, or
// reports false when it is not JSON (which decodeBody refuses).
func fuzzFields(raw string) (*fields, bool) {
	f := &fields{}
	dec := json.NewDecoder(strings.NewReader(`{"v":` + raw + `}`))
	dec.UseNumber()
	if err := dec.Decode(&f.m); err != nil || dec.More() {
		return nil, false
	}
	return f, true
}

// refused checks that f recorded exactly one problem, of kind Invalid and
// naming v.
func refused(t *testing.T, f *fields, raw string) {
	t.Helper()
	err := f.v.Err()
	fe := keel.FieldErrors(err)
	if keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != "v" {
		t.Fatalf("%s refused with %v, want one Invalid problem of v", raw, err)
	}
}

// FuzzDuration: a duration field (seconds, "10m", …) never panics, never
// reads as negative or wrapped around, and a value it refuses is an
// Invalid problem naming the field, read as 0.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{`18446744074`, `"18446744074"`, `9223372036`, `9223372037`, `-1`, `"-1s"`,
		`"10m"`, `"2562047h47m16.854775807s"`, `"2562048h"`, `1e300`, `"1e300"`, `0.5`, `null`, `""`, `"  60 "`,
		`true`, `[]`, `{}`, `-0`, `1E2`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fs, ok := fuzzFields(raw)
		if !ok {
			return
		}
		d := fs.duration("v")
		if d < 0 {
			t.Fatalf("%s read as %v", raw, d)
		}
		if fs.v.Err() != nil {
			refused(t, fs, raw)
			if d != 0 {
				t.Fatalf("%s refused but read as %v", raw, d)
			}
			return
		}
		// An integer number of seconds reads as exactly that many.
		if n, ok := fs.m["v"].(json.Number); ok {
			if secs, err := strconv.ParseInt(string(n), 10, 64); err == nil && d != time.Duration(secs)*time.Second {
				t.Fatalf("%s read as %v", raw, d)
			}
		}
	})
}

// FuzzInteger: an integer field never panics, never reads as negative,
// and a value it refuses is an Invalid problem naming the field, read as
// 0; a number it accepts is the number sent.
func FuzzInteger(f *testing.F) {
	for _, s := range []string{`64`, `"64"`, `9223372036854775807`, `9223372036854775808`, `-1`, `"-1"`,
		`99999999999999999999`, `1.5`, `1e3`, `""`, `null`, `true`, `" 7 "`, `"0x10"`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fs, ok := fuzzFields(raw)
		if !ok {
			return
		}
		n := fs.integer("v")
		if n < 0 {
			t.Fatalf("%s read as %d", raw, n)
		}
		if fs.v.Err() != nil {
			refused(t, fs, raw)
			if n != 0 {
				t.Fatalf("%s refused but read as %d", raw, n)
			}
			return
		}
		s, _ := fs.text("v")
		if want, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64); int64(n) != want {
			t.Fatalf("%s read as %d, want %d", raw, n, want)
		}
	})
}
