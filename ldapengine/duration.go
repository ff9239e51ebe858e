package ldapengine

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
)

// ParseDuration reads a duration of the wire: a duration string with units
// ns, us (or µs), ms, s, m, h ("90s", "1h30m"), an integer number of seconds
// as a string ("90") or a JSON number (90, json.Number("90")). A negative,
// fractional-second or unreadable value is an error of kind keel.ErrInvalid
// for field. nil and "" give zero.
func ParseDuration(field string, v any) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, keel.Invalid(field, "must be a duration string (such as \"90s\") or an integer number of seconds")
	}
	var secs float64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case time.Duration:
		if x < 0 {
			return bad()
		}
		return x, nil
	case int:
		secs = float64(x)
	case int64:
		secs = float64(x)
	case float64:
		secs = x
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return bad()
		}
		secs = f
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, nil
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			secs = float64(n)
			break
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return bad()
		}
		return d, nil
	default:
		return bad()
	}
	if secs < 0 || secs != math.Trunc(secs) || secs > float64(math.MaxInt64/int64(time.Second)) {
		return bad()
	}
	return time.Duration(secs) * time.Second, nil
}
