// Package governance is the composition root of keel's governance family:
// the organization catalog of package project (organizations, their
// projects, workspaces, teams and team access) and the policies and policy
// sets of package policy. Open builds both over the store it is given,
// joins them, and finishes the deletions a crash interrupted, so that a
// program that embeds keel writes no prefix and no start-up step.
//
// # Basics
//
// Open takes the program's store (or a view of it) and an Authorizer;
// Catalog and Policies return the two services, which keep their own
// contracts (see packages project and policy):
//
//	gov, err := governance.Open(ctx, store, &governance.Options{Authorizer: keel.AllowAll{}})
//	defer gov.Close()
//	org, err := gov.Catalog().CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
//	p, err := gov.Policies().Create(ctx, "acme", policy.CreateRequest{Name: &name, EnforcementLevel: &level})
//
// The keys of the store, all under two prefixes of Open's choosing:
//
//	project/   the catalog (package project): organizations, projects,
//	           workspaces, teams, their indexes, pending deletions (del/)
//	           and pending cleanups (cleanup/)
//	policy/    the policies, their code and policy sets (package policy)
//
// Nothing else is written, so the family shares a store with other
// families (package mount keeps "sys/", "lease/", "kv/", "mounts/",
// "ldapengine/" and "identity/"; package peering "peering/"). The prefixes are those the example server
// chose before this package existed: the data files it wrote are served
// unchanged.
//
// The policies are registered with the catalog (policy.Options.Organizations):
// deleting an organization deletes its policies and policy sets, and no
// policy can be written into an organization being deleted. Open then
// calls project.Catalog.FinishDeletions, which finishes every organization
// deletion, and every cleanup of a deleted team's or project's access, that
// an error or a crash stopped midway.
//
// # Errors
//
// Open fails with an error of kind keel.KindInvalid naming the field
// ("Store", "Authorizer"; keel.FieldErrors) when store or
// Options.Authorizer is nil: allowing everything, anonymous callers
// included, is never a default, and a program that does its own access
// control says so with keel.AllowAll{}. It then writes nothing. A deletion
// Open cannot finish does not fail it (see Caveats). The services' errors
// are theirs.
//
// # Concurrency
//
// A Service, its Catalog and its Policies are safe for concurrent use.
// Several processes may open the family over one store (etcd): each
// finishes the pending deletions at its start, and project lets several
// finishers work on one deletion at once. Open starts no goroutine.
//
// # Caveats
//
// A pending deletion that Open cannot finish (the store fails, or it was
// started by a program that had registered a service this one does not
// build) is logged through Options.Logger, with the error, and left
// pending: its organization reads as not found, nothing can be added to
// it, and deleting or creating the name again, or the next Open, finishes
// it. The Authorizer is called inside the services' transactions: it must
// not start a transaction of the same store. Close stops nothing today: it
// is where the family's workers will stop, and a program calls it before
// it closes the store.
package governance
