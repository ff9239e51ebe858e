package main

import (
	"net/http"

	"github.com/keelhq/keel/examples/httpapi/tfe"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
)

// mountTFE serves the organization catalog (package project, keys under
// "project/") and the policies (package policy, keys under "policy/") in
// HCP Terraform's JSON:API dialect under /api/v2 (token header
// "Authorization: Bearer <token>").
func mountTFE(mux *http.ServeMux, d *deps) error {
	catalog := project.New(d.store, &project.Options{Authorizer: d.authorizer, Clock: d.clock})
	policies := policy.New(d.store, &policy.Options{Authorizer: d.authorizer, Clock: d.clock, Organizations: catalog})
	tfe.New(catalog, policies, &tfe.Options{Logger: d.logger}).Register(mux)
	return nil
}
