package keel_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// TestParseDuration pins the forms Vault's parseutil.ParseDurationSecond
// takes, as they arrive from JSON, and the refusal of negative and
// overflowing durations, each an Invalid problem of the field.
func TestParseDuration(t *testing.T) {
	maxSeconds := strconv.FormatInt(math.MaxInt64/int64(time.Second), 10)
	tests := map[string]struct {
		in      any
		want    time.Duration
		wantErr string // a part of the rule; "" for success
	}{
		"null":                 {in: nil, want: 0},
		"empty string":         {in: "", want: 0},
		"zero":                 {in: json.Number("0"), want: 0},
		"seconds number":       {in: json.Number("3600"), want: time.Hour},
		"seconds string":       {in: "3600", want: time.Hour},
		"plus sign":            {in: "+60", want: time.Minute},
		"days":                 {in: "2d", want: 48 * time.Hour},
		"zero days":            {in: "0d", want: 0},
		"hours":                {in: "1h", want: time.Hour},
		"minutes":              {in: "90m", want: 90 * time.Minute},
		"seconds unit":         {in: "30s", want: 30 * time.Second},
		"milliseconds":         {in: "1500ms", want: 1500 * time.Millisecond},
		"compound":             {in: "1h2m3s", want: time.Hour + 2*time.Minute + 3*time.Second},
		"fraction with unit":   {in: "0.5h", want: 30 * time.Minute},
		"largest seconds":      {in: json.Number(maxSeconds), want: time.Duration(math.MaxInt64/int64(time.Second)) * time.Second},
		"negative seconds":     {in: json.Number("-1"), wantErr: "must not be negative"},
		"negative string":      {in: "-60", wantErr: "must not be negative"},
		"negative days":        {in: "-1d", wantErr: "must not be negative"},
		"negative duration":    {in: "-1h", wantErr: "must not be negative"},
		"fraction no unit":     {in: json.Number("1.5"), wantErr: "must be a duration"},
		"exponent":             {in: json.Number("1e3"), wantErr: "must be a duration"},
		"fraction of days":     {in: "1.5d", wantErr: "must be a duration"},
		"days and hours":       {in: "1d12h", wantErr: "must be a duration"},
		"bare d":               {in: "d", wantErr: "must be a duration"},
		"word":                 {in: "forever", wantErr: "must be a duration"},
		"leading space":        {in: " 60", wantErr: "must be a duration"},
		"bool":                 {in: true, wantErr: "must be a duration"},
		"object":               {in: map[string]any{}, wantErr: "must be a duration"},
		"array":                {in: []any{}, wantErr: "must be a duration"},
		"Go float, whole":      {in: 60.0, want: time.Minute},
		"Go float, fraction":   {in: 1.5, wantErr: "must be a duration"},
		"seconds overflow":     {in: json.Number(maxSeconds + "0"), wantErr: "out of range"},
		"negative overflow":    {in: "-" + maxSeconds + "0", wantErr: "must not be negative"},
		"days overflow":        {in: "106752d", wantErr: "out of range"},
		"beyond int64":         {in: "99999999999999999999", wantErr: "must be a duration"},
		"duration overflow":    {in: "3000000h", wantErr: "must be a duration"},
		"unit without number":  {in: "h", wantErr: "must be a duration"},
		"number then space":    {in: "60 ", wantErr: "must be a duration"},
		"days with plus sign":  {in: "+1d", want: 24 * time.Hour},
		"largest whole days":   {in: "106751d", want: 106751 * 24 * time.Hour},
		"mixed units":          {in: "1h30m", want: 90 * time.Minute},
		"microseconds (µ)":     {in: "10µs", want: 10 * time.Microsecond},
		"nanoseconds":          {in: "1ns", want: time.Nanosecond},
		"hours and fractional": {in: "1.25h", want: 75 * time.Minute},
		"int":                  {in: 90, want: 90 * time.Second},
		"int64 negative":       {in: int64(-1), wantErr: "must not be negative"},
		"Duration":             {in: time.Minute, want: time.Minute},
		"Duration negative":    {in: -time.Minute, wantErr: "must not be negative"},
		"Vault's overflow":     {in: json.Number("18446744074"), wantErr: "out of range"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := keel.ParseDuration("TTL", tc.in)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseDuration(%#v) = %v, %v; want %v", tc.in, got, err, tc.want)
				}
				return
			}
			fe := keel.FieldErrors(err)
			if keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != "TTL" || !strings.Contains(fe[0].Rule, tc.wantErr) {
				t.Fatalf("ParseDuration(%#v) = %v, %v; want an Invalid problem of TTL containing %q", tc.in, got, err, tc.wantErr)
			}
			if got != 0 {
				t.Fatalf("ParseDuration(%#v) refused but returned %v", tc.in, got)
			}
		})
	}
}

// FuzzParseDuration: ParseDuration never panics, never returns a negative
// duration or a duration with an error, and reads a string of a whole
// number as that many seconds when a time.Duration holds them.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"", "0", "60", "-1", "+5", "1h", "90m", "30s", "7d", "1.5", "1.5h",
		"1e3", "-5m", "106751d", "106752d", "9223372036854775807", "9223372036", "9223372037",
		"1h30m", "d", "h", " 1", "1d2h", "10µs", "\xff", "2562047h", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, json.Number(s)} {
			d, err := keel.ParseDuration("TTL", v)
			if err == nil && d < 0 {
				t.Fatalf("ParseDuration(%#v) = %v, negative", v, d)
			}
			if err != nil && (d != 0 || keel.KindOf(err) != keel.KindInvalid) {
				t.Fatalf("ParseDuration(%#v) = %v, %v", v, d, err)
			}
		}
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			return
		}
		d, err := keel.ParseDuration("TTL", s)
		inRange := n >= 0 && n <= math.MaxInt64/int64(time.Second)
		switch {
		case inRange && (err != nil || d != time.Duration(n)*time.Second):
			t.Fatalf("ParseDuration(%q) = %v, %v; want %d seconds", s, d, err, n)
		case !inRange && err == nil:
			t.Fatalf("ParseDuration(%q) = %v, want an error", s, d)
		}
	})
}
