package main

import (
	"context"
	"fmt"

	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/governance"
)

// mountTFE serves the governance family (package governance: the
// organization catalog of package project and the policies of package
// policy, over the server's store) in HCP Terraform's JSON:API dialect
// under /api/v2 (token header "Authorization: Bearer <token>").
// governance.Open chooses the keys, joins the policies to the catalog
// (deleting an organization deletes its policies) and finishes the
// deletions a crash stopped midway before the routes serve, logging one it
// cannot finish and leaving it pending; the server closes the family when
// it stops.
//
// It also serves Terraform's remote service discovery document, GET
// /.well-known/terraform.json (no token), which points the tfe provider at
// /api/v2: the provider asks for it over https only, so a server that
// Terraform talks to serves TLS (-tls-cert and -tls-key, or -dev-tls).
func mountTFE(mux *routes, d *deps) error {
	gov, err := governance.Open(context.Background(), d.store, &governance.Options{
		Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger, Observer: d.observer(),
	})
	if err != nil {
		return fmt.Errorf("tfe: %w", err)
	}
	d.onClose(gov.Close)
	tfe.New(gov.Catalog(), gov.Policies(), &tfe.Options{Logger: d.logger}).Register(mux)
	mux.Handle("GET "+tfe.DiscoveryPath, tfe.DiscoveryHandler())
	return nil
}
