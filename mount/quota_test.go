package mount_test

import (
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
)

// TestDisableUncountsQuotas: a mount's removal of its leases (revoked by
// the engine, then by force) takes them out of the lease-count quotas that
// counted them, exactly.
func TestDisableUncountsQuotas(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		table := open(t, openStore(t))
		leases := table.Leases()
		fill(t, table, "big/", 30)
		fill(t, table, "kept/", 5)
		for _, q := range []lease.QuotaRequest{{Name: "all", MaxLeases: 100}, {Name: "big", Path: "big/", MaxLeases: 100}} {
			if _, err := leases.PutQuota(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := table.Disable(ctx, "big/"); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]int{"all": 5, "big": 0} {
			q, err := leases.GetQuota(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if q.Leases != want {
				t.Errorf("quota %s counts %d leases after Disable, want %d", name, q.Leases, want)
			}
		}
	})
}
