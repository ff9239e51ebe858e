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
	read := func(b *testing.B) {
		for b.Loop() {
			if _, err := v.e.GetStaticCred(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("unmarked", read)
	// After MarkRestored, once the role is verified (the first read
	// verified it): the mark and the role's verified key are read.
	if err := v.e.MarkRestored(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := v.e.GetStaticCred(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	// Such reads do not reach the directory: they succeed while it is
	// down.
	v.dir.SetDown(true)
	b.Run("marked-verified", read)
	v.dir.SetDown(false)
	// The worker verified everything and removed the mark.
	if _, err := v.e.Step(ctx, v.clock.Now()); err != nil {
		b.Fatal(err)
	}
	if marked(b, v.e) {
		b.Fatal("the mark stays")
	}
	v.dir.SetDown(true)
	b.Run("mark-gone", read)
	v.dir.SetDown(false)
}
