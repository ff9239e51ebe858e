package passwordpolicy_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/keelhq/keel/passwordpolicy"
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

// BenchmarkGenerate generates 64-character passwords without a policy, from
// a parsed policy and from a stored one (read and parsed each time, as the
// engines do), next to reading 64 bytes of crypto/rand as a yardstick.
func BenchmarkGenerate(b *testing.B) {
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
			if _, err := passwordpolicy.GenerateAlphanumeric(64); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("policy-parsed", func(b *testing.B) {
		p, err := passwordpolicy.Parse(benchPolicy)
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
		pol, err := passwordpolicy.New(memstore.New(nil), nil)
		if err != nil {
			b.Fatal(err)
		}
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
