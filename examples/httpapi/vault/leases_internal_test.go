package vault

import (
	"testing"
	"time"
)

// TestCappedWarning: the adapter renders a capped lease.Renewal as Vault's
// warning, its durations in whole seconds without zero units.
func TestCappedWarning(t *testing.T) {
	for _, tc := range []struct {
		requested, granted time.Duration
		want               string
	}{
		{4 * time.Hour, 90 * time.Minute, `TTL of "4h" exceeded the effective max_ttl of "1h30m"; TTL value is capped accordingly`},
		{768 * time.Hour, time.Hour, `TTL of "768h" exceeded the effective max_ttl of "1h"; TTL value is capped accordingly`},
		{3 * time.Hour, 2*time.Hour - 1500*time.Millisecond, `TTL of "3h" exceeded the effective max_ttl of "1h59m58s"; TTL value is capped accordingly`},
		{time.Hour + 1, time.Hour, `TTL of "1h" exceeded the effective max_ttl of "1h"; TTL value is capped accordingly`},
		{time.Hour + 30*time.Second, 2 * time.Minute, `TTL of "1h30s" exceeded the effective max_ttl of "2m"; TTL value is capped accordingly`},
		{time.Second, 500 * time.Millisecond, `TTL of "1s" exceeded the effective max_ttl of "0s"; TTL value is capped accordingly`},
	} {
		if got := cappedWarning(tc.requested, tc.granted); got != tc.want {
			t.Errorf("cappedWarning(%s, %s) = %s, want %s", tc.requested, tc.granted, got, tc.want)
		}
	}
}
