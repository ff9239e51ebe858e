// Package policy keeps policy-as-code policies and policy sets per
// organization, as HCP Terraform's policies and policy sets APIs do, over a
// storage.Store.
//
// # Basics
//
// A program opens the policies with the catalog through governance.Open,
// which chooses their parts of the store and joins them. New, for a
// program that composes them itself, returns a Service that keeps its keys
// in the store it is given, as given. Options.Organizations
// (a *project.Catalog) tells which organizations exist, and New registers
// the Service with it, so that deleting an organization deletes its
// policies and policy sets (see Deleting an organization). A policy is
// created as an object, then its code is uploaded:
//
//	policies, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Organizations: orgs})
//	p, err := policies.Create(ctx, "acme", policy.CreateRequest{
//		Name:    &name,
//		Enforce: &[]policy.Enforce{{Path: "no-public-buckets.policy", Mode: policy.SoftMandatory}},
//	})
//	if err := policies.Upload(ctx, p.ID, []byte("main = rule { true }")); err != nil { // at most 10 MiB
//		return err
//	}
//	code, _ := policies.Download(ctx, p.ID)
//	page, _ := policies.List(ctx, "acme", policy.ListRequest{})
//
// (governance.Open makes the two services over one store; Update changes a
// policy's fields, and ListRequest filters by name with Search.)
//
// Rules, each refused with keel.KindInvalid on the Go path of the field in
// the operation's input (keel.FieldError), all at once:
//
//   - Name: required, letters, digits, "-" and "_"; unique in the
//     organization ignoring case (keel.KindAlreadyExists); it cannot
//     change (UpdateRequest has none).
//   - Enforce: exactly one element ("Enforce"), whose Path is required
//     ("Enforce[0].Path") and whose Mode ("Enforce[0].Mode") is
//     hard-mandatory (the default), soft-mandatory or advisory; a path
//     that does not name the policy's own file is accepted and gets the
//     mode hard-mandatory, as the specification says. The policy's own
//     file is the specification's "<name>.policy" (the original name on
//     update) and, an extension of the specification's rule, the names
//     HCP Terraform's clients give it: "<name>.sentinel" for a Sentinel
//     policy, "<name>.rego" for an OPA one (the tfe provider sends
//     these). Update replaces it whole.
//   - the current API's Kind ("sentinel", the default, or "opa"), Query
//     (required for opa, refused for sentinel) and EnforcementLevel (used
//     when Enforce is not sent; for opa: advisory or mandatory). One of
//     Enforce and EnforcementLevel is required on create.
//   - PolicySetIDs: each ("PolicySetIDs[<i>]") must be a set of the
//     organization, of the policy's kind.
//
// # Policy sets
//
// A policy set groups policies of one kind and applies them to workspaces:
// those it is attached to, those of the projects it is attached to, or
// every workspace of the organization when it is global, but for the
// workspaces it excludes. keel keeps the sets and their members; it runs
// no policy checks.
//
//	set, err := policies.CreateSet(ctx, "acme", policy.CreateSetRequest{Name: &name, PolicyIDs: ids, WorkspaceIDs: wss})
//	err = policies.AddSetMembers(ctx, set.ID, policy.SetProjects, []string{prj})
//	err = policies.RemoveSetMembers(ctx, set.ID, policy.SetPolicies, []string{id})
//	set, err = policies.UpdateSet(ctx, set.ID, policy.UpdateSetRequest{Overridable: &yes})
//	page, err := policies.ListSets(ctx, "acme", policy.ListSetsRequest{Search: "net"})
//	err = policies.DeleteSet(ctx, set.ID)
//
// Rules, on the Go paths of CreateSetRequest, UpdateSetRequest and the ids of
// AddSetMembers:
//
//   - Name ("Name"): required, letters, digits, "-" and "_"; unique in
//     the organization ignoring case (keel.KindAlreadyExists); it can
//     change.
//   - Kind ("Kind"): sentinel (the default) or opa; it cannot change.
//   - Members ("PolicyIDs[<i>]", "WorkspaceIDs[<i>]", "ProjectIDs[<i>]",
//     "WorkspaceExclusionIDs[<i>]"; "IDs[<i>]" for AddSetMembers): each
//     must exist and be of the set's organization; a policy must be of
//     the set's kind; a workspace or project the caller may not read is
//     refused as a missing one. An id given twice counts once. RemoveSetMembers
//     ignores ids that are not members, so that a member deleted first
//     (by Delete or the catalog) can still be removed.
//   - Global ("Global", or "IDs" when adding): a global set is attached
//     to no workspace or project; it may exclude workspaces.
//   - PolicyToolVersion ("PolicyToolVersion"): not empty when sent.
//
// HCP Terraform's defaults: Description and PoliciesPath null,
// Global and Overridable false, AgentEnabled false for Sentinel and true
// for OPA, PolicyToolVersion "latest", PolicyUpdatePatterns empty.
// CreatedAt is the creation time; UpdatedAt moves with every update and
// every change of members. ListSets returns the sets in name order (case
// folded), paged as List, with Search and FilterKind.
//
// Members go with their object: deleting a policy (Delete) takes it out
// of its sets in the same transaction, and deleting a workspace or a
// project in the catalog does the same, through the
// project.Registration.OnForget hook New sets.
//
// Every operation on a set is one transaction. So that each fits in one
// transaction of the store, a set holds at most Limits().MaxSetMembers members
// (62 with etcd's default limits of 128 operations and 128 reads per
// transaction; no bound on a store without limits): CreateSet and
// AddSetMembers refuse more, up front, with keel.KindTooLarge naming the
// limit. Likewise the deletion of a policy, workspace or project that is
// a member of more than Limits().MaxMemberSets sets (40 with etcd's defaults) is
// refused with keel.KindTooLarge, leaving the store as it was, and
// Create refuses a policy that would join more.
//
// Fields are never named by a wire name: an adapter maps these paths to
// its own (package examples/httpapi/tfe to JSON:API pointers).
//
// UpdatedAt is nil (null) right after creation and is set, in UTC to the
// millisecond, by every upload and update. Download returns the last
// upload; before the first, keel.KindNotFound. An upload of more than
// MaxCodeSize (10 MiB, 10485760 bytes) is keel.KindTooLarge and saves
// nothing; so is one of more than the store holds in one value and one
// transaction: Limits().MaxCodeBytes, 1,429,504 bytes (1,396 KiB) on
// etcdstore's default limits, the limit named in the error.
//
// List returns the policies in name order (case folded), ListSets the
// sets, as package project's lists do: the request embeds
// keel.ListRequest (Limit: 20, 20, when not given; a limit
// above MaxPageSize, 100, is cut to it, as HCP Terraform cuts its page sizes),
// and returns a keel.CountedPage that keel.All walks. Next is the cursor
// of the following page, the last item's folded name ("" on the last
// page); without a cursor, Offset (at least 0, "Offset") starts the page
// at that position of the filtered list, which is how a transport renders
// numbered pages. Total counts the organization's policies (sets),
// Matching those the filters keep: Search (a case-insensitive substring
// of the name) and FilterKind (sentinel or opa, not specified, done as
// HCP Terraform does). A page past the end is empty.
//
// Not shown by the specification, done as HCP Terraform does: an upload
// succeeds with no body (the adapter answers 204); updated-at also changes
// on update.
//
// # Deleting an organization
//
// project.Catalog.DeleteOrganization deletes the organization's policies
// (record, code, name index, count) and policy sets (record and
// memberships) through the PurgeFunc New registers; the package project
// documents the steps and how a deletion stopped by a crash is finished.
// From the start of the deletion, the organization's policies and sets
// read as not found and nothing can be created in it: every operation
// checks, in its own transaction, that the organization exists in the
// catalog. The policies are deleted in batches sized from the store's
// limits (storage.Batch), the sets first (their memberships, then their
// records), then the policies; a set and its members are always of one
// organization, so that the memberships of an organization are all found
// from its sets. The sets of an organization are found through an index
// (orgset/<org>/<set>); the first deletion over a store written before the
// index existed first indexes its sets, once, and marks the store (key
// v/orgset), the one key a deletion leaves that is of no organization.
//
// # Errors
//
// Every error's message starts with "policy: ", once. Every error wraps a
// keel kind (errors.Is, keel.KindOf):
//
//   - keel.KindInvalid: a broken rule above (keel.FieldErrors); an
//     unknown organization is not found first, whatever the body. New
//     fails with it when its store is nil or cannot be registered with
//     Options.Organizations (another store, an overlapping view).
//   - keel.KindNotFound: an unknown organization or policy, one of an
//     organization being deleted, code never uploaded, or a caller without
//     the manage-policies right: existence never leaks, every endpoint
//     answers 404.
//   - keel.KindAlreadyExists: a taken name.
//   - keel.KindTooLarge: code over 10 MiB, or over Limits().MaxCodeBytes on a
//     store of smaller values (etcd); a set or a member past the limits
//     of the store (see Policy sets).
//   - the store's kinds; keel.KindInternal for a corrupt record.
//
// A write that fails leaves the store as it was.
//
// # Rights
//
// Every operation needs manage-policies on
// "organizations/<org>/policies"; without it the organization, policy or
// set is not found. A workspace or project named as a member of a set
// (CreateSet, AddSetMembers) also needs read on it, as the catalog asks
// it ("organizations/<org>/workspaces/<id>",
// "organizations/<org>/projects/<id>"): without it the member is refused
// exactly as a missing one, so that no answer tells whether it exists.
//
// # Concurrency
//
// A Service is safe for concurrent use. Every write is one transaction,
// which also reads the organization's record in the catalog's view;
// ids and times are chosen before it, so closures are safe to run again.
//
// # Caveats
//
// The policy count of each organization is kept: a list without filters
// reads its page from the name index, skipping the keys before
// it (keys only; a cursor seeks to it), so the first page costs the same
// in any organization and a deep offset costs one key read per skipped
// policy. A list with Search reads every key of the organization's name index (no record) to count
// the matches; only the page's records are loaded. A list with
// FilterKind also reads the record of every policy whose name matches.
// Each operation reads the organization's record, one key more.
//
// A set list reads every key of the organization's set name index to
// count the sets, and with a kind filter every set's record; each set of
// the page costs a scan of its members. Sets are not versioned (no
// policy set versions, VCS or parameters), and carry no tag selectors.
// A store whose sets were written before sets had a name index (or an
// organization index) is indexed by the first set operation that needs
// it, once (key v/setname); where two such sets of one organization share
// a name, the first keeps it in the index.
package policy
