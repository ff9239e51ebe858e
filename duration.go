package keel

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// The rules a duration breaks, in the errors of ParseDuration.
const (
	durationSyntax   = `must be a duration: whole seconds ("3600") or a number with a unit ("1h", "90m", "30s", "7d")`
	durationNegative = "must not be negative"
	durationRange    = "is out of range: at most 2562047h (about 292 years)"
)

// ParseDuration reads the duration v of field as Vault's clients send
// durations (the forms of Vault's parseutil.ParseDurationSecond), as
// decoded from JSON:
//
//   - nil (JSON null) and "" are zero;
//   - a whole number of seconds: a JSON number (json.Number, or a float64,
//     int or int64 without fraction) or a string of one ("3600", "+60");
//   - a whole number of days: "7d";
//   - a Go duration string (time.ParseDuration): "1h30m", "1.5h", "500ms";
//   - a time.Duration, as it is.
//
// Anything else fails with an error of kind KindInvalid for field: a
// fraction or an exponent without unit ("1.5", "1e3"), a space, a negative
// duration, one beyond what a time.Duration holds (about 292 years), a
// bool, an object or an array.
func ParseDuration(field string, v any) (time.Duration, error) {
	d, rule := parseDuration(v)
	if rule != "" {
		return 0, Invalid(field, "%s", rule)
	}
	return d, nil
}

// parseDuration returns the duration v, or the rule it breaks.
func parseDuration(v any) (time.Duration, string) {
	var s string
	switch v := v.(type) {
	case nil:
		return 0, ""
	case time.Duration:
		if v < 0 {
			return 0, durationNegative
		}
		return v, ""
	case int:
		return seconds(int64(v), time.Second)
	case int64:
		return seconds(v, time.Second)
	case float64:
		if v != math.Trunc(v) || math.IsInf(v, 0) {
			return 0, durationSyntax
		}
		if v < 0 {
			return 0, durationNegative
		}
		if v > float64(math.MaxInt64/int64(time.Second)) {
			return 0, durationRange
		}
		return time.Duration(v) * time.Second, ""
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return 0, durationSyntax
	}
	if s == "" {
		return 0, ""
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return seconds(n, time.Second)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil {
			return 0, durationSyntax
		}
		return seconds(n, 24*time.Hour)
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, durationSyntax
	case d < 0:
		return 0, durationNegative
	}
	return d, ""
}

// seconds returns n units, or the rule n breaks: negative, or beyond a
// time.Duration.
func seconds(n int64, unit time.Duration) (time.Duration, string) {
	switch {
	case n < 0:
		return 0, durationNegative
	case n > math.MaxInt64/int64(unit):
		return 0, durationRange
	}
	return time.Duration(n) * unit, ""
}
