package vault_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/storage/memstore"
)

// TestFieldNamesOnTheWire: the domain's refusals name Go paths (LeaseID,
// DefaultTTL, Options["version"], Policy); the answers name Vault's wire
// names, one message per problem.
func TestFieldNamesOnTheWire(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.client(t, rootToken)
	sys := c.Sys()

	t.Run("lease", func(t *testing.T) {
		if err := sys.Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.KVv1("leased").Put(ctx, "k", map[string]any{"v": "1", "ttl": "10s"}); err != nil {
			t.Fatal(err)
		}
		s, err := c.KVv1("leased").Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		_, err = sys.Renew(s.Raw.LeaseID, -10)
		wantField(t, err, "increment", "must not be negative") // keel.ParseDuration's
		_, err = c.Logical().Write("sys/leases/renew", map[string]any{"lease_id": s.Raw.LeaseID, "increment": "soon"})
		wantField(t, err, "increment", "must be a duration") // keel.ParseDuration's
		e.clock.Advance(11 * time.Second)
		_, err = sys.Renew(s.Raw.LeaseID, 10)
		wantField(t, err, "lease_id", "lease expired")
	})

	t.Run("mounts", func(t *testing.T) {
		for _, tc := range []struct {
			path       string
			in         api.MountInput
			field, has string
		}{
			{"a..b", api.MountInput{Type: "kv"}, "path", `must not contain ".."`},
			{"sys/x", api.MountInput{Type: "kv"}, "path", "is reserved"},
			{"x", api.MountInput{Type: "pki"}, "type", `no engine type "pki"`},
			{"x", api.MountInput{Type: "kv", Options: map[string]string{"version": "2"}}, "options.version", "only kv version 1"},
			{"x", api.MountInput{Type: "kv", Options: map[string]string{"Frobnicate": "1"}}, "options.Frobnicate", "unknown option"},
			{"x", api.MountInput{Type: "kv", Config: api.MountConfigInput{DefaultLeaseTTL: "2h", MaxLeaseTTL: "1h"}},
				"config.default_lease_ttl", "greater than max lease TTL"},
			{"x", api.MountInput{Type: "kv", Config: api.MountConfigInput{MaxLeaseTTL: "100000h"}},
				"config.max_lease_ttl", "above the system max lease TTL"},
			{"x", api.MountInput{Type: "kv", Config: api.MountConfigInput{DefaultLeaseTTL: "soon"}},
				"config.default_lease_ttl", "must be a duration"}, // keel.ParseDuration's
		} {
			wantField(t, sys.Mount(tc.path, &tc.in), tc.field, tc.has)
		}
	})

	t.Run("password policy", func(t *testing.T) {
		_, err := c.Logical().Write("sys/policies/password/p", map[string]any{"policy": "length = 2"})
		wantField(t, err, "policy", "length must be")
		_, err = c.Logical().Write("sys/policies/password/p", map[string]any{"policy": "rule \"charset\" {"})
		wantField(t, err, "policy", "is not valid HCL")
	})
}
