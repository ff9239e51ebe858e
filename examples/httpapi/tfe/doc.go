// Package tfe is a thin HTTP adapter that speaks HCP Terraform's JSON:API
// dialect for keel's organization catalog (package project) and policies
// (package policy), so that the official Go client github.com/hashicorp/go-tfe
// works against a keel program.
//
// # Basics
//
// New builds a Handler over a *project.Catalog and a *policy.Service;
// Register adds the routes to an http.ServeMux, all under /api/v2:
//
//	GET    /ping                                        204
//	POST   /organizations                               create (201), with the settings sent
//	GET    /organizations, /organizations/:org          list (those the caller may read), read
//	PATCH  /organizations/:org                          update email and settings (no rename)
//	DELETE /organizations/:org                          204
//	POST   /organizations/:org/projects                 create (201)
//	GET    /organizations/:org/projects                 list: page[number], page[size], q,
//	                                                    filter[names], filter[permissions][update],
//	                                                    filter[permissions][create-workspace], sort
//	GET, PATCH, DELETE /projects/:id                    show, update, delete (204)
//	POST   /projects/:id/relationships/workspaces       move workspaces (204)
//	POST   /organizations/:org/workspaces               create in relationships.project (201)
//	GET    /organizations/:org/workspaces               page[number], page[size], search[name],
//	                                                    search[wildcard-name], filter[project][id],
//	                                                    include
//	GET    /workspaces/:id/relationships/remote-state-consumers
//	                                                    an empty list (keel keeps no state)
//	GET, PATCH, DELETE /organizations/:org/workspaces/:name, /workspaces/:id
//	                                                    read (include), update (rename, settings,
//	                                                    move), delete
//	POST   .../actions/safe-delete, .../actions/force-delete
//	                                                    of both workspace paths: delete (204)
//	POST   /organizations/:org/teams                    create (201)
//	GET    /organizations/:org/teams                    page[number], page[size], filter[names], q
//	GET, PATCH, DELETE /teams/:id                       read, update, delete (204)
//	POST, GET /team-projects                            add (201; 422 when given already), list
//	                                                    (filter[project][id], page[number], page[size])
//	GET, PATCH, DELETE /team-projects/:id               read, update, remove (204)
//	POST   /organizations/:org/policies                 create (200, as the specification says)
//	GET    /organizations/:org/policies                 page[number], page[size], search[name],
//	                                                    filter[kind], include
//	GET, PATCH, DELETE /policies/:id                    show (include), update, delete (204)
//	PUT    /policies/:id/upload                         raw body, at most 10 MiB; 204
//	GET    /policies/:id/download                       application/octet-stream
//	POST   /organizations/:org/policy-sets              create (201), with members
//	GET    /organizations/:org/policy-sets              page[number], page[size], search[name],
//	                                                    filter[kind], include
//	GET, PATCH, DELETE /policy-sets/:id                 show (include), update, delete (204)
//	POST, DELETE /policy-sets/:id/relationships/:rel    add, remove members (204): rel is
//	                                                    policies, workspaces, projects or
//	                                                    workspace-exclusions
//
// Documents are application/vnd.api+json. Brackets in query names may be
// percent-encoded. Lists carry links (self, first, last as URLs; prev and
// next as URLs or null) and meta.pagination (current-page, page-size,
// prev-page, next-page, total-pages, total-count); the project list also
// carries meta.status-counts (total, matching). Timestamps are UTC with
// milliseconds and "Z".
//
// The library's lists are paged by cursor (keel.ListRequest, returning
// keel.CountedPage); the adapter renders HCP Terraform's numbered pages
// from them:
//
//	page[size]                        ListRequest.Limit (default project.DefaultPageSize, cut to project.MaxPageSize)
//	page[number]                      the request's Offset: (number-1) * size
//	meta.pagination, links            built from page[number], the size and CountedPage.Matching
//	meta.status-counts                CountedPage.Total and Matching (the project list)
//
// Response shapes follow the specification: a project's create response
// has only permissions.can-update, and no workspace-count or team-count;
// a policy's create and show responses have relationships.policy-sets,
// update and list do not; links.download is absent from the create
// response. include=policy_sets adds the sets as included resources.
// Every policy set document (create, show, update, list) has its
// relationships policies, workspaces, projects and workspace-exclusions
// with their data, and the counts policy-count, workspace-count and
// project-count; include=policies adds the policies as included
// resources, and the other values go-tfe sends (workspaces, projects,
// workspace_exclusions, project_exclusions, current_version,
// newest_version) are accepted and add nothing. A workspace read or list
// takes include=organization and include=project, which add the
// organization and project the caller may read; the other values go-tfe
// sends (current_run, current-state-version, readme, outputs,
// effective_tag_bindings, ...) name what keel does not keep and add
// nothing; any other value is 422 on the parameter include.
//
// A workspace document has links.self
// /api/v2/organizations/:org/workspaces/:name and links.self-html
// /app/:org/workspaces/:name, as HCP Terraform gives them, source
// "tfe-api", setting-overwrites (execution-mode and agent-pool: whether
// the workspace has an execution mode of its own, or follows its
// organization's default-execution-mode) and auto-destroy-at (null when
// none; null sent clears it). operations, sent, sets the execution mode
// (false local, true remote). A team list holds the organization's owners
// team.
//
// DELETE /organizations/:org deletes everything the organization owns,
// its policies and policy sets included: the rule is package project's
// (policy.New registers the policies with the catalog), and the adapter
// only calls DeleteOrganization. Give New a catalog and a policy service
// built over views of one store (storage.Sub(store, "project/") and
// storage.Sub(store, "policy/")), the policies registered with the
// catalog through policy.Options.Organizations.
//
// The caller must be in the request's context (keel.WithPrincipal) before
// the handler runs: the adapter reads no token. In the example server a
// middleware maps "Authorization: Bearer <token>" to a principal.
//
// # Errors
//
// Errors are JSON:API error documents {"errors":[{"status":"422","title":
// ...,"detail":...,"source":{"pointer":"/data/attributes/name"}}]}, with
// status as a string and one error per invalid field. Kinds map to
// statuses in one table (statusOf): invalid and already-exists 422 (HCP
// Terraform's "has already been taken"), not found 404 (title "not found",
// no detail), forbidden 403 (the detail of a refused move lists the
// workspace ids), conflict 409 (deleting a project that holds workspaces,
// or the owners team: HCP Terraform does not document the status; 409 is
// keel's choice), too large 413. A malformed or empty body is 422 on
// /data.
//
// The packages project and policy name an invalid field by its Go path
// in the operation's input (keel.FieldError); the adapter maps it to its
// source in one table (wireOf, in respond.go), which it also reads
// requests through:
//
//	Name, Description, Kind, Query,   /data/attributes/name, ...
//	Email, Access, Visibility, ...    (the settings: kebab case, see below)
//	EnforcementLevel                  /data/attributes/enforcement-level
//	Enforce, Enforce[0].Mode          /data/attributes/enforce, /data/attributes/enforce/0/mode
//	PolicySetIDs[2]                   /data/relationships/policy-sets/data/2/id
//	PolicyIDs[2]                      /data/relationships/policies/data/2/id
//	WorkspaceIDs, ProjectIDs,         /data/relationships/workspaces/data/..., projects,
//	WorkspaceExclusionIDs             workspace-exclusions
//	IDs[2] (add or remove members)    /data/2/id
//	FilterKind                        parameter filter[kind]
//	WildcardName                      parameter search[wildcard-name]
//	TeamID, ProjectID                 /data/relationships/team/data/id, /data/relationships/project/data/id
//	Sort, PageNumber, PageSize,       parameters sort, page[number], page[size],
//	Search, Include                   search[name], include
//
// A Go name the table lacks is taken for an attribute named in kebab
// case ("MaxCount" → /data/attributes/max-count); indexes and sub-fields
// follow as pointer segments. The shape of a document (no data, a wrong
// type, an attribute of the wrong JSON type, a to-one relationship given
// several identifiers) is checked by the adapter; every rule on the
// values (a name required, its characters, a level, a team of the
// organization) is the domain's, answered with the domain's words.
//
// Not shown by the specification, done as HCP Terraform does: project,
// organization, workspace and team creates answer 201; a policy upload
// answers 204 with no body; the maximum page size is 100.
//
// Not shown by the specification, keel's choices: an enforce element
// with an empty or missing path is refused (422 on
// /data/attributes/enforce/0/path); a team access without a team or a
// project is 422 on /data/relationships/team/data/id or
// /data/relationships/project/data/id; error details are keel's words,
// not HCP Terraform's.
//
// Settings (an organization's, a workspace's, a team's) are named by
// their Go names, kebab case on the wire ("CollaboratorAuthPolicy" →
// collaborator-auth-policy); map keys and sub-fields follow as pointer
// segments (`OrganizationAccess["x"]` → /data/attributes/organization-access/x,
// "WorkspaceAccess.Runs" → /data/attributes/workspace-access/runs).
//
// Every answer about an organization, project, workspace, team or policy
// is given after the caller's read right is checked: a caller who may not
// read it gets 404, whatever the body, and lists hold only what the
// caller may read. Page numbers past the end give empty data with the
// true meta.pagination; a page number above 16777216 (maxListPage), or one
// that is not an integer, is 422 on the parameter page[number].
//
// # Differences from HCP Terraform
//
// What remains different, and why:
//
//	what                                      keel                               why
//	organization rename (PATCH, new name)     422 on /data/attributes/name        the name is the id in every key
//	settings (organization, workspace, team)  stored, rendered, not enforced      keel runs no plans, sessions or VCS
//	execution mode "agent"                    422                                 keel keeps no agent pools
//	workspace safe-delete                     deletes                             keel keeps no state: nothing to protect
//	can-force-delete                          = can-destroy (delete right)        the same operation
//	resource-count, locked, tag-names         0, false, []                        no state, locks or tags
//	workspace source                          "tfe-api"                           every workspace is made through the API
//	workspace links.self-html                 a path keel serves no page at       keel has no web interface
//	setting-overwrites agent-pool             = its execution-mode                keel keeps no agent pools
//	owners team                               cannot be renamed (422)             clients find it by its name
//	team organization-access of owners        every permission true               as owners hold them, not enforced
//	team organization-access                  stored, not enforced                rights come from the Authorizer
//	team-projects id                          tprj_<team>_<project>               an access is keyed by both
//	project-access, workspace-access          custom defaults for every level     only "custom" keeps values sent
//	GET /organizations                        one page, readable ones only        few organizations per caller
//	policy file paths                         <name>.policy, .sentinel, .rego     the clients' names (see package policy)
//	policy sets: vcs-repo                     422 on /data/attributes/vcs-repo    keel keeps no VCS connections
//	policy set versions, parameters, tags     no routes; versioned false          keel runs no policy checks
//	policy set members                        at most 62 per set (etcd), see policy one transaction per operation
//	policy set project-exclusions             no route                            not built yet
//	policy set name                           unique ignoring case                as policy names
//	remove a member that is not one           204                                 the provider's destroy after a delete
//	remote state consumers                    none; only GET is routed            keel keeps no state to share
//
// # Caveats
//
// Only the attributes keel keeps are rendered, with a few constants of
// the table above; the other attributes of go-tfe's structs read as zero
// values. Rate-limit headers are not sent.
package tfe
