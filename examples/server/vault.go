package main

import (
	"context"

	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
)

// mountVault serves the server's mount table (package mount: kv, ldap and
// openldap engines, whose workers and lease manager stop with the server)
// in Vault's dialect with the table's identity groups,
// auth/token/lookup-self, and what `vault status` reads
// (sys/health, sys/seal-status, sys/leader), without a token for the
// last three. The token comes in X-Secrets-Token, X-Vault-Token or
// Authorization: Bearer (see requestToken).
func mountVault(mux *routes, d *deps) error {
	restored, err := restoredCopy(context.Background(), d.store) // snapshotcmd.go
	if err != nil {
		return err
	}
	table, err := mount.Open(context.Background(), d.store, &mount.Options{
		Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger, Observer: d.observer(),
		Leader: d.leaders, Defaults: mount.VaultDefaults(),
		Leases:   &lease.Options{Held: d.holdLeases || restored},
		Reserved: consul.Prefixes(), // the Consul dialect's paths, served by mountConsul
	})
	if err != nil {
		return err
	}
	d.mounts = table
	d.onClose(func() error { table.Close(); return nil })
	if restored {
		finishRestore(context.Background(), table, d.store, d.logger)
	}
	rateLimits, err := openRateLimits(d)
	if err != nil {
		return err
	}
	vault.New(table, &vault.Options{
		Clock: d.clock, Logger: d.logger, RateLimits: rateLimits,
		Server: vault.Server{Version: keelVersion(), BuildDate: buildDate(),
			ClusterName: d.state.ClusterName, ClusterID: d.state.ClusterID, StorageType: d.storageType},
		Snapshots: &vault.Snapshots{Store: d.store, Authorizer: d.authorizer, Keep: keptOnRestore},
	}).Register(mux)
	return nil
}
