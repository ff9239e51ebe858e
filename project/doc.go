// Package project keeps the organization catalog of HCP Terraform's API
// over a storage.Store: organizations, each created with a "Default
// Project"; the projects that group workspaces; workspaces; teams and their
// access to projects.
//
// # Basics
//
// A program opens the catalog with the policies through governance.Open,
// which chooses its part of the store and joins the two. New, for a
// program that composes them itself, returns a Catalog that keeps its keys
// in the store it is given, as given. Projects are created, updated, read,
// listed and deleted by id, and workspaces moved between them:
//
//	cat, err := project.New(storage.Sub(store, "project/"), nil) // no Authorizer: everything is allowed
//	org, err := cat.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
//	prj, err := cat.Create(ctx, "acme", project.ProjectRequest{Name: &name})
//	ws, err := cat.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("vpc"), ProjectID: new(prj.ID)})
//	err = cat.Delete(ctx, prj.ID) // keel.KindConflict: it holds a workspace
//	if err := cat.MoveWorkspaces(ctx, org.DefaultProjectID, []string{ws.ID}); err != nil {
//		return err
//	}
//	projects := keel.All(ctx, 1, func(ctx context.Context, r keel.ListRequest) (keel.Page[project.Project], error) {
//		page, err := cat.List(ctx, "acme", project.ListRequest{ListRequest: r, Sort: "-name"})
//		return page.Page, err
//	})
//
// (governance.Open gives a program the Catalog with the policies; a
// ListRequest also filters, with Query and Names, and counts.)
//
// Ids are "prj-", "ws-" and "team-" followed by 16 random letters and
// digits. Rules, each refused with keel.KindInvalid on the Go path of the
// field in the operation's input (keel.FieldError; an argument is named
// as if the arguments were a struct: "TeamID" for teamID):
//
//   - a project's Name: 3 to 36 characters of letters, digits, spaces,
//     "-" and "_", not starting or ending with a space; required on
//     create. Unique in the organization ignoring case
//     (keel.KindAlreadyExists), as HCP Terraform's "has already been
//     taken".
//   - Description: at most 256 characters; nil until
//     set. Update keeps the fields not sent.
//   - organization, workspace and team names ("Name"): required, letters,
//     digits, "-" and "_" (workspaces at most 90), workspace and team
//     names unique in their organization ignoring case.
//   - the owners team: every organization is created with a team named
//     OwnersTeamName ("owners"), as HCP Terraform creates it, holding
//     every organization permission (Team.Owners). It cannot be deleted
//     (keel.KindConflict), as HCP Terraform refuses it, nor renamed
//     ("Name"; keel's choice, so that clients find it by its name, as
//     they do). An organization created before keel made owners teams
//     has none.
//   - CreateWorkspace's ProjectID ("ProjectID"): a project of the
//     organization (nil or "" is the default project).
//   - PutTeamAccess: ProjectID and TeamID are required ("ProjectID",
//     "TeamID"), the team must be of the project's organization, and
//     access ("Access") is read (the default), write, maintain, admin or
//     custom. CreateTeamAccess, HCP Terraform's add, refuses an access
//     the team has already (keel.KindAlreadyExists), as HCP Terraform
//     does; PutTeamAccess gives or changes it.
//   - List's Sort: "name", "-name" or "".
//   - every list's Offset: at least 0.
//   - the settings HCP Terraform's clients send (OrganizationSettings,
//     WorkspaceSettings, TeamSettings), stored with HCP Terraform's
//     defaults and rendered; keel enforces none of them. Their rules:
//     CollaboratorAuthPolicy password or two_factor_mandatory;
//     SessionTimeout and SessionRemember at least 1; DefaultExecutionMode
//     and a workspace's ExecutionMode remote or local (keel keeps no
//     agent pools); AggregatedCommitStatusEnabled not with
//     SendPassingStatusesForUntriggeredSpeculativePlans; a workspace's
//     TriggerPatterns not with TriggerPrefixes; a team's Visibility
//     secret or organization, its OrganizationAccess keys among HCP
//     Terraform's organization permissions (manage-policies,
//     manage-workspaces, manage-vcs-settings, manage-projects, ...;
//     `OrganizationAccess["x"]`); a custom team
//     access's values among HCP Terraform's ("WorkspaceAccess.Runs").
//     A workspace's Operations, the older form of ExecutionMode (false
//     is local), agrees with an ExecutionMode sent with it;
//     SettingOverwrites.ExecutionMode is not false with a mode sent, and
//     true needs one, sent or the workspace's own.
//   - UpdateOrganization's Name: the organization's own (keel does not
//     rename organizations). UpdateWorkspace and UpdateTeam rename, with
//     the rules of the create's name.
//
// Fields are never named by a wire name: an adapter maps these paths to
// its own (package examples/httpapi/tfe to JSON:API pointers and query
// parameters).
//
// A Project carries WorkspaceCount, TeamCount (teams given access with
// PutTeamAccess or CreateTeamAccess) and the caller's Permissions:
// CanUpdate (update on the project), CanDestroy (force-delete),
// CanCreateWorkspace (create on its workspaces).
//
// Every list (List, ListTeams, ListWorkspaces, ListTeamAccesses) takes one
// request that embeds keel.ListRequest and returns a keel.CountedPage, so
// that keel.All walks it: a page holds at most Limit items
// (DefaultPageSize, 20, when not given; MaxPageSize, 100, at most: a
// larger limit is cut to it, as HCP Terraform cuts its page sizes); Next is
// the cursor of the page that follows, the last item's sort key (its
// folded name; a team access's team id), "" on the last page, and the
// next page starts after that item wherever the list now puts it.
// Without a cursor, Offset starts the page at that position of the
// filtered, sorted list: a transport renders numbered pages with it
// (package examples/httpapi/tfe renders HCP Terraform's numbered pages
// so). The page counts the list: Total, its items before the
// filters, and Matching, those the filters keep; a page past the end is
// empty. ListOrganizations, whose organizations are few per caller, takes
// a keel.ListRequest and returns a keel.Page, by name.
//
// List's filters are Query (a case-insensitive substring), Names
// (case-insensitive exact names; wins over Query), CanUpdate and
// CanCreateWorkspace (the caller's permissions), and its Sort name or
// -name (the default order is name order, which is stable). Its Total is
// the organization's projects.
//
// Not shown by the specification, done as HCP Terraform does: deleting a
// project that still holds workspaces is refused with keel.KindConflict
// (the adapter answers 409; the HCP Terraform documentation does not name
// a status, and 409 is the status of a request refused by the state of
// the object); the default project of an organization cannot be deleted
// (keel.KindConflict), as HCP Terraform refuses it; workspaces already in
// the destination of a move stay where they are and count once.
//
// A workspace without an execution mode of its own follows its
// organization's DefaultExecutionMode, as HCP Terraform's workspaces
// follow their defaults (keel's projects keep none): read, ExecutionMode
// is the mode in force and SettingOverwrites.ExecutionMode says whether
// it is the workspace's own. A mode sent (ExecutionMode, or Operations)
// becomes its own; SettingOverwrites.ExecutionMode false gives it up.
// AutoDestroyAt is kept (keel queues no destroy run).
//
// ListTeams filters by Names and Query (a case-insensitive substring;
// with Names, both apply); ListWorkspaces by Search (a case-insensitive
// substring), WildcardName ("*" for any characters, ignoring case) and
// ProjectID, its Total being the workspaces the caller may read;
// ListTeamAccesses has no filter.
//
// Organizations, workspaces and teams carry the caller's permissions too
// (OrganizationPermissions, WorkspacePermissions, Team.CanUpdate and
// CanDestroy). keel keeps no state or runs: HCP Terraform's safe delete
// of a workspace (refused while it manages resources) and its force
// delete are both DeleteWorkspace, and WorkspacePermissions.CanForceDelete
// is CanDestroy.
//
// A service registered with the Catalog (see below) may also hear, with
// Registration.OnForget, of every workspace and project the Catalog
// deletes, in the deleting transaction, so that it keeps no reference to
// them.
//
// # Deleting a team or a project
//
// A team may have access to any number of projects, and any number of
// teams to a project: more access keys than one transaction of etcd
// holds. DeleteTeam and Delete therefore delete the team or project in one
// transaction, which also records a pending cleanup (cleanup/<team|prj>/<id>),
// then its access keys in as many transactions as the store's limits
// require (storage.Batch), then the pending cleanup. Until the cleanup is
// over, the deleted team's access is listed by no read (ListTeamAccesses,
// GetTeamAccess), though a project's TeamCount still counts it. A cleanup
// stopped midway (an error, a crash) is finished by FinishDeletions.
//
// # Deleting an organization
//
// DeleteOrganization deletes everything the organization owns: its
// projects, workspaces, teams and team access, and the data of every
// service registered with the Catalog. A service that keeps data per
// organization registers when it is built, in the same step: policy.New,
// given the Catalog in policy.Options.Organizations, registers the
// policies and policy sets, so a program cannot build one without the
// other's deletion. Register takes the service's store, which must be a
// view of the store under the Catalog's view that overlaps neither it nor
// another registered view (storage.Join), and a PurgeFunc. The
// Registration it returns runs the service's transactions with the
// Catalog's organizations in the same transaction (Orgs.Exists), so that
// no write of the service adds to an organization being deleted.
//
// An organization of any size is deleted, on any store: its keys are
// deleted in as many transactions as the store's limits require
// (storage.Batch; on etcd, at most 128 operations and 128 reads each), so
// the deletion is not one transaction. It is made safe across a crash
// midway thus:
//
//  1. One transaction checks the right, deletes the organization's record
//     and writes a pending deletion (key del/<name>: a random id, and the
//     views of the services registered then). From then on the
//     organization reads as not found, and so does everything of it (each
//     read of a project, workspace, team, policy or set checks that its
//     organization exists), and every write that would add to it is
//     refused as not found. A refused deletion (no right, an unknown
//     organization, a failed commit) leaves the store as it was.
//  2. Each registered service deletes its keys of the organization
//     through its PurgeFunc, then the Catalog deletes its own, in batches.
//     Each batch first checks, in its own transaction, that the pending
//     deletion is still the same one, so that a late finisher stops
//     instead of deleting an organization created again since.
//  3. One transaction deletes the pending deletion.
//
// A deletion stopped between 1 and 3 (an error, a crash) is finished,
// from where it stopped, by DeleteOrganization of the name again (with
// the delete right; it then returns nil), by CreateOrganization of the
// name, which finishes it before it creates, or by FinishDeletions, which
// a program calls when it starts. Finishing needs every service recorded
// in step 1 to be registered with the Catalog that finishes: otherwise it
// fails with keel.KindConflict and leaves the deletion pending, so that no
// service's data outlives its organization because a program did not
// build that service.
//
// # Errors
//
// Every error's message starts with "project: ", once (the errors of a
// registered service's closure, which Registration.Update and View pass
// on, are the service's own). Every error wraps a keel kind (errors.Is,
// keel.KindOf):
//
//   - keel.KindInvalid: a broken rule above, with every problem of the
//     request at once (keel.FieldErrors).
//   - keel.KindNotFound: an unknown organization, project, workspace or
//     team, one the caller may not read (existence does not leak), or one
//     of an organization whose deletion has started.
//   - keel.KindForbidden: a right missing on an object the caller may
//     read; for MoveWorkspaces, the error lists the workspace ids that are
//     unknown or may not be moved.
//   - keel.KindAlreadyExists: a taken name; an access CreateTeamAccess
//     finds given already.
//   - keel.KindTooLarge: a MoveWorkspaces of more workspaces than one
//     transaction of the store holds (on etcd, more than 42 from one
//     project), refused before anything is written.
//   - keel.KindConflict: deleting a project that holds workspaces, the
//     default project, or the owners team; finishing the deletion of an
//     organization whose recorded services are not all registered.
//   - the store's kinds, keel.KindInternal for a corrupt record.
//
// A write that fails leaves the store as it was; a DeleteOrganization that
// fails after its first transaction leaves the organization being deleted
// (see above).
//
// # Rights
//
// Each operation asks Options.Authorizer (nil: everything is allowed):
//
//	CreateOrganization  create            organizations
//	GetOrganization     read              organizations/<org>
//	UpdateOrganization  update            organizations/<org> (and read)
//	ListOrganizations   read              each organizations/<org>: those the caller cannot read are not listed
//	DeleteOrganization  delete            organizations/<org>
//	Create              manage-projects   organizations/<org>/projects (and read on the organization)
//	List                list              organizations/<org>/projects (and read on the organization)
//	Get                 read              organizations/<org>/projects/<id>
//	Update              update            organizations/<org>/projects/<id>
//	Delete              force-delete      organizations/<org>/projects/<id>
//	MoveWorkspaces      move-workspaces   the destination and every source project (and read on each workspace)
//	PutTeamAccess,      manage-projects   organizations/<org>/projects/<id> (and read on organizations/<org>/teams)
//	CreateTeamAccess,
//	UpdateTeamAccess,
//	DeleteTeamAccess
//	GetTeamAccess,      read              organizations/<org>/projects/<id>
//	ListTeamAccesses
//	CreateWorkspace     create            organizations/<org>/projects/<id>/workspaces (and read on the organization, and on a project named)
//	GetWorkspace,       read              organizations/<org>/workspaces/<id>
//	GetWorkspaceByName
//	UpdateWorkspace     update            organizations/<org>/workspaces/<id>; a move, move-workspaces on both projects
//	ListWorkspaces      read              the organization, then each workspace: those the caller
//	                                      cannot read are not listed
//	DeleteWorkspace     delete            organizations/<org>/workspaces/<id>
//	CreateTeam          create            organizations/<org>/teams (and read on the organization)
//	GetTeam, ListTeams  read              organizations/<org>/teams (ListTeams: and read on the organization)
//	UpdateTeam          update            organizations/<org>/teams
//	DeleteTeam          delete            organizations/<org>/teams
//	FinishDeletions     none: it finishes deletions a caller with delete started
//
// Operations on an organization, project, workspace or team first need
// read on it: without it the object is not found (404), as HCP Terraform
// answers, before any rule of the input is checked, so that no answer
// tells whether it exists; with read and without the
// operation's right, keel.KindForbidden (403). A destination of a move
// without move-workspaces is not found, as the specification says. An
// object an input names (the project of CreateWorkspace or of a move, a
// workspace of MoveWorkspaces, the team of PutTeamAccess,
// CreateTeamAccess, UpdateTeamAccess or DeleteTeamAccess) that the caller may not read
// answers as a missing one, with the same kind and field, so that no
// create, update or removal tells whether it exists.
//
// # Concurrency
//
// A Catalog is safe for concurrent use; it keeps no state besides its
// configuration and its registered services. Every write but
// DeleteOrganization is one transaction that reads what it decides on
// through it, so counts never drift. Ids and times are chosen before the
// transaction: closures are safe to run again (faultstore's Rerun).
// Several callers may finish one deletion at once, in one process or
// several: each batch deletes what is still there.
//
// # Caveats
//
// Projects are listed from a name index (the folded name, then the id): a
// page without filters reads the index keys up to the page and loads only
// its own records, so its cost does not grow with the organization for
// the first pages of sort "name" (a cursor of sort "name" seeks to its
// page); a page of sort "-name", or at a deep offset, skips keys only up
// to its position. With Query or a permission filter every index key is
// read (no record) and the permission filters ask the Authorizer once per
// match. Names reads one index key per name. The other lists read every
// index entry of their list to count it (ListWorkspaces also each
// workspace record whose name matches, and asks the Authorizer once per
// workspace).
//
// Each read of a project, workspace or team by id reads its
// organization's record too (one more key), to hide the records of an
// organization whose deletion has started. A registered service must be
// registered in every process that deletes or creates organizations over
// the store; registrations live in the Catalog, not in the store.
//
// The Authorizer is called inside transactions, with the transaction's
// ctx: it must not start a transaction of the same store.
package project
