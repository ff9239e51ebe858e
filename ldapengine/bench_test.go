package ldapengine

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage/memstore"
)

const benchPolicy = `length = 64
rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 2
}
rule "charset" {
  charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
  min-chars = 2
}
rule "charset" {
  charset = "0123456789"
  min-chars = 2
}
rule "charset" {
  charset = "!@#$%^&*-_=+"
  min-chars = 2
}
`

// BenchmarkPassword generates 64-character passwords without a policy, from
// a parsed policy and from a stored one (read and parsed each time, as the
// engine does), next to reading 64 bytes of crypto/rand as a yardstick.
func BenchmarkPassword(b *testing.B) {
	b.Run("crypto-rand-64-bytes", func(b *testing.B) {
		buf := make([]byte, 64)
		for b.Loop() {
			if _, err := rand.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no-policy", func(b *testing.B) {
		for b.Loop() {
			if _, err := GeneratePassword(DefaultPasswordLength); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("policy-parsed", func(b *testing.B) {
		p, err := ParsePasswordPolicy(benchPolicy)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := p.Generate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("policy-stored", func(b *testing.B) {
		ctx := context.Background()
		pol := NewPasswordPolicies(memstore.New(nil), nil)
		if err := pol.Put(ctx, "bench", benchPolicy); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := pol.Generate(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRotateStatic is one rotation of a static role (RotateRole):
// against the fake directory on memstore, and against a real slapd.
func BenchmarkRotateStatic(b *testing.B) {
	ctx := context.Background()
	b.Run("fake", func(b *testing.B) {
		v := newEnv(b, FlavorOpenLDAP, nil)
		v.configure(b)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour, SkipImportRotation: true}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := v.e.RotateRole(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("slapd", func(b *testing.B) {
		srv := slapdtest.Start(b)
		e, err := New(memstore.New(nil), FlavorOpenLDAP, "openldap", nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.WriteConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL}); err != nil {
			b.Fatal(err)
		}
		if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: slapdtest.AliceDN, RotationPeriod: time.Hour, SkipImportRotation: true}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := e.RotateRole(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStep is one worker Step with 10 roles due among 100 and among
// 10,000: the cost follows the due roles, not the total. Each iteration
// moves the clock by the due roles' period, so that the same 10 are due
// again; the others are due in years.
func BenchmarkStep(b *testing.B) {
	for _, total := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("roles=%d/due=10", total), func(b *testing.B) {
			ctx := context.Background()
			v := newEnv(b, FlavorOpenLDAP, nil)
			v.configure(b)
			const due, period = 10, MinRotationPeriod
			for i := range total {
				dn := fmt.Sprintf("uid=u%05d,ou=users,dc=example,dc=org", i)
				v.dir.Add(dn, "initial")
				p := 100_000 * time.Hour
				if i%(total/due) == 0 {
					p = period
				}
				if err := v.e.PutStaticRole(ctx, fmt.Sprintf("r%05d", i), StaticRoleRequest{Username: dn, DN: dn, RotationPeriod: p, SkipImportRotation: true}); err != nil {
					b.Fatal(err)
				}
			}
			now := t0
			changes := v.dir.Changes()
			n := 0
			for b.Loop() {
				now = now.Add(period)
				if _, err := v.e.Step(ctx, now); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if got := v.dir.Changes() - changes; got != due*n {
				b.Fatalf("%d rotations in %d steps, want %d", got, n, due*n)
			}
		})
	}
}
