package main

import (
	"context"
	"net/http"

	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/identity"
)

// mountVault serves keel's kv engines, ldap and openldap engines (whose
// rotation workers stop with the server) and lease manager in Vault's
// dialect (token header X-Secrets-Token), and the identity groups kept
// under "identity/" of the server's store.
func mountVault(mux *http.ServeMux, d *deps) error {
	h, err := vault.New(context.Background(), d.store, d.leases, &vault.Options{
		Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger,
		Groups:  identity.New(d.store, &identity.Options{Authorizer: d.authorizer, Clock: d.clock}),
		Leaders: d.leaders,
	})
	if err != nil {
		return err
	}
	d.onClose(func() error { h.Close(); return nil })
	h.Register(mux)
	return nil
}
