package mount_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage/memstore"
)

// Example_rules is the README's: a table behind rules, a kv mount whose
// reads issue leases, and a request routed to it by a caller whose policy
// covers only that mount.
func Example_rules() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	policies := map[string][]keel.Rule{
		"team-a": {{Path: "team-a/*", Capabilities: []keel.Capability{keel.CapCreate, keel.CapRead}}},
	}
	admin := keel.WithPrincipal(ctx, keel.Principal{ID: "admin", Policies: []string{keel.RootPolicy}})
	alice := keel.WithPrincipal(ctx, keel.Principal{ID: "alice", Policies: []string{"team-a"}})

	err := func(ctx context.Context) error {
		authz, err := keel.NewRuleAuthorizer(policies) // required: keel.AllowAll{} must be asked for
		if err != nil {
			return err
		}
		table, err := mount.Open(ctx, store, &mount.Options{Authorizer: authz, Defaults: mount.VaultDefaults()})
		if err != nil {
			return err
		}
		defer table.Close() // stops the engines' workers, then the lease manager's
		_, err = table.Enable(ctx, mount.EnableRequest{Path: "team-a/", Type: "kv",
			Options: map[string]string{"leased_passthrough": "true"}})
		if err != nil {
			return err
		}
		m, rest, ok := table.Route("team-a/db") // m.KV serves rest; its reads issue leases of table.Leases()
		fmt.Println(m.Path, rest, ok)
		if err := m.KV.Write(alice, rest, map[string]any{"password": "s3cr3t", "ttl": "30m"}); err != nil {
			return err
		}
		s, err := m.KV.Read(alice, rest)
		if err != nil {
			return err
		}
		fmt.Println(s.Data["password"], s.LeaseID != "")
		_, err = table.Enable(alice, mount.EnableRequest{Path: "team-b/", Type: "kv"})
		fmt.Println(keel.KindOf(err))
		return nil
	}(admin)
	if err != nil {
		panic(err)
	}
	// Output:
	// team-a/ db true
	// s3cr3t true
	// forbidden
}
