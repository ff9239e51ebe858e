package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// mountTFE serves the organization catalog (package project, keys under
// "project/") and the policies (package policy, keys under "policy/") in
// HCP Terraform's JSON:API dialect under /api/v2 (token header
// "Authorization: Bearer <token>"). The prefixes are those the packages
// chose themselves before they took their store as given: the keys of an
// existing store stay where they are.
//
// Deleting an organization deletes its policies too (policy.New registers
// the policies with the catalog). Deletions a crash stopped midway are
// finished here, before the routes serve; one that cannot be finished is
// logged and left pending (its organization reads as not found, and
// deleting or creating the name again finishes it).
//
// It also serves Terraform's remote service discovery document, GET
// /.well-known/terraform.json (no token), which points the tfe provider at
// /api/v2: the provider asks for it over https only, so a server that
// Terraform talks to serves TLS (-tls-cert and -tls-key, or -dev-tls).
func mountTFE(mux *http.ServeMux, d *deps) error {
	catalog := project.New(storage.Sub(d.store, "project/"), &project.Options{Authorizer: d.authorizer, Clock: d.clock})
	policies, err := policy.New(storage.Sub(d.store, "policy/"), &policy.Options{Authorizer: d.authorizer, Clock: d.clock, Organizations: catalog})
	if err != nil {
		return fmt.Errorf("tfe: %w", err)
	}
	if err := catalog.FinishDeletions(context.Background()); err != nil && d.logger != nil {
		d.logger.Warn("tfe: organization deletions left unfinished", "error", err)
	}
	tfe.New(catalog, policies, &tfe.Options{Logger: d.logger}).Register(mux)
	mux.Handle("GET "+tfe.DiscoveryPath, tfe.DiscoveryHandler())
	return nil
}
