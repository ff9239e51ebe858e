package kv

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

// TestParseTTL pins the forms Vault's parseutil.ParseDurationSecond takes,
// as they arrive from JSON, and the refusal of negative durations.
func TestParseTTL(t *testing.T) {
	maxSeconds := strconv.FormatInt(math.MaxInt64/int64(time.Second), 10)
	tests := map[string]struct {
		in      any
		want    time.Duration
		wantErr error
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
		"negative seconds":     {in: json.Number("-1"), wantErr: errTTLNegative},
		"negative string":      {in: "-60", wantErr: errTTLNegative},
		"negative days":        {in: "-1d", wantErr: errTTLNegative},
		"negative duration":    {in: "-1h", wantErr: errTTLNegative},
		"fraction no unit":     {in: json.Number("1.5"), wantErr: errTTLSyntax},
		"exponent":             {in: json.Number("1e3"), wantErr: errTTLSyntax},
		"fraction of days":     {in: "1.5d", wantErr: errTTLSyntax},
		"days and hours":       {in: "1d12h", wantErr: errTTLSyntax},
		"bare d":               {in: "d", wantErr: errTTLSyntax},
		"word":                 {in: "forever", wantErr: errTTLSyntax},
		"leading space":        {in: " 60", wantErr: errTTLSyntax},
		"bool":                 {in: true, wantErr: errTTLSyntax},
		"object":               {in: map[string]any{}, wantErr: errTTLSyntax},
		"array":                {in: []any{}, wantErr: errTTLSyntax},
		"Go float (not JSON)":  {in: 1.0, wantErr: errTTLSyntax},
		"seconds overflow":     {in: json.Number(maxSeconds + "0"), wantErr: errTTLRange},
		"negative overflow":    {in: "-" + maxSeconds + "0", wantErr: errTTLRange},
		"days overflow":        {in: "106752d", wantErr: errTTLRange},
		"beyond int64":         {in: "99999999999999999999", wantErr: errTTLSyntax},
		"duration overflow":    {in: "3000000h", wantErr: errTTLSyntax},
		"unit without number":  {in: "h", wantErr: errTTLSyntax},
		"number then space":    {in: "60 ", wantErr: errTTLSyntax},
		"days with plus sign":  {in: "+1d", want: 24 * time.Hour},
		"largest whole days":   {in: "106751d", want: 106751 * 24 * time.Hour},
		"mixed units":          {in: "1h30m", want: 90 * time.Minute},
		"microseconds (µ)":     {in: "10µs", want: 10 * time.Microsecond},
		"nanoseconds":          {in: "1ns", want: time.Nanosecond},
		"hours and fractional": {in: "1.25h", want: 75 * time.Minute},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseTTL(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("parseTTL(%#v) error %v, want %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("parseTTL(%#v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
