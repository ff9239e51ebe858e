package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
)

// BenchmarkGetStaticCred is one read of a static role's credential on
// memstore with the fake directory, beside its yardstick in the same run
// (GetStaticRole, the same read of the role without the credential's
// checks).
//
//	go test -run '^$' -bench GetStaticCred ./ldapengine/
func BenchmarkGetStaticCred(b *testing.B) {
	ctx := context.Background()
	v := newEnv(b, everystore.Mem, FlavorOpenLDAP, nil)
	v.configure(b)
	if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.Run("yardstick-GetStaticRole", func(b *testing.B) {
		for b.Loop() {
			if _, err := v.e.GetStaticRole(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarked", func(b *testing.B) {
		for b.Loop() {
			if _, err := v.e.GetStaticCred(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
