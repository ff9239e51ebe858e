package kv

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

const (
	// ttlKey is the key whose value reads report as their lease duration.
	ttlKey = "ttl"
	// legacyTTLKey is read, as in Vault, when there is no ttlKey.
	legacyTTLKey = "lease"
)

var (
	errTTLSyntax   = errors.New(`must be a duration: whole seconds ("3600") or a number with a unit ("1h", "90m", "30s", "7d")`)
	errTTLNegative = errors.New("must not be negative")
	errTTLRange    = errors.New("is out of range")
)

// parseTTL parses the value of a ttl key as decoded from JSON, as Vault's
// parseutil.ParseDurationSecond does, and refuses a negative result:
//
//   - nil (JSON null) and "" mean zero;
//   - a json.Number or a string of a whole number, such as 3600 or "3600",
//     is seconds;
//   - a string of a whole number and "d", such as "7d", is days of 24 hours;
//   - any other string is a Go duration (time.ParseDuration: "1h30m",
//     "1.5h", "90m", "30s", "500ms");
//   - anything else (a fraction or an exponent without unit, a bool, an
//     object, an array) is refused.
func parseTTL(v any) (time.Duration, error) {
	var s string
	switch v := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return 0, errTTLSyntax
	}
	d, err := parseDurationSecond(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errTTLNegative
	}
	return d, nil
}

func parseDurationSecond(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return mulDuration(n, time.Second)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil {
			return 0, errTTLSyntax
		}
		return mulDuration(n, 24*time.Hour)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errTTLSyntax
	}
	return d, nil
}

// mulDuration returns n units, or errTTLRange when that overflows.
func mulDuration(n int64, unit time.Duration) (time.Duration, error) {
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return 0, errTTLRange
	}
	return time.Duration(n) * unit, nil
}
