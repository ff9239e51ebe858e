package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// DefaultProjectName is the name of the project created with every
// organization, as HCP Terraform does.
const DefaultProjectName = "Default Project"

// Options configure a Catalog. The zero value (or nil) allows everything
// and uses the system clock.
type Options struct {
	// Authorizer decides the caller's rights on each operation. Nil
	// allows everything.
	Authorizer keel.Authorizer
	// Clock gives creation times. Nil: keel.SystemClock{}.
	Clock keel.Clock
}

// Catalog keeps organizations, their projects, teams and workspaces in a
// storage.Store. Create one with New; it is safe for concurrent use.
type Catalog struct {
	store storage.Store
	authz keel.Authorizer
	clock keel.Clock

	mu       sync.Mutex
	services map[string]*Registration // by the prefix of their view
}

// New returns a Catalog that keeps its keys in store, as given: a store
// or a view its caller has scoped. Programs give it storage.Sub(root,
// "project/"), and the services that keep data per organization (policy)
// views of the same root beside it (see Register). New reads nothing from
// the store.
func New(store storage.Store, opts *Options) *Catalog {
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Catalog{
		store:    store,
		authz:    o.Authorizer,
		clock:    keel.ClockOrSystem(o.Clock),
		services: map[string]*Registration{},
	}
}

// Organization is an organization as read.
type Organization struct {
	// Name identifies the organization; it is its id on the wire.
	Name string
	// Email is the organization's contact address, as given.
	Email string
	// CreatedAt is the creation time, in UTC.
	CreatedAt time.Time
	// DefaultProjectID is the project created with the organization.
	DefaultProjectID string
}

func (r *orgRecord) public() Organization {
	return Organization{Name: r.Name, Email: r.Email, CreatedAt: r.CreatedAt, DefaultProjectID: r.DefaultProject}
}

// slugError returns the error of kind keel.KindInvalid, on "Name", of a
// name that breaks the rule of organization, team and workspace names:
// required, letters, digits, "-" and "_", and at most maxLen bytes when
// maxLen is above 0. It returns nil for a good name.
func slugError(name string, maxLen int) error {
	switch {
	case name == "":
		return keel.Invalid("Name", "is required")
	case !validSlug(name):
		return keel.Invalid("Name", "must be letters, numbers, - and _")
	case maxLen > 0 && len(name) > maxLen:
		return keel.Invalid("Name", "must be at most %d characters", maxLen)
	}
	return nil
}

// validSlug reports whether s is made of letters, digits, "-" and "_" only,
// and is not empty: the rule of organization, workspace and team names.
func validSlug(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !isWordRune(c) {
			return false
		}
	}
	return true
}

func isWordRune(c rune) bool {
	return c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// CreateOrganization creates the organization name, with its default
// project. It needs create on "organizations". The name ("Name") is
// required, letters, digits, "-" and "_"; a taken name (ignoring case is
// not applied: organization names are case-sensitive ids) is
// keel.KindAlreadyExists.
//
// When a deletion of an organization of that name was stopped midway (an
// error, a crash), CreateOrganization first finishes it, so that nothing
// of the old organization is seen in the new one; it fails with the
// error of that deletion when it cannot finish it.
func (c *Catalog) CreateOrganization(ctx context.Context, name, email string) (Organization, error) {
	if err := keel.Authorize(ctx, c.authz, keel.CapCreate, orgsResource()); err != nil {
		return Organization{}, err
	}
	if err := slugError(name, 0); err != nil {
		return Organization{}, err
	}
	now := c.clock.Now().UTC()
	prjID := NewID("prj")
	rec := orgRecord{Name: name, Email: email, CreatedAt: now, DefaultProject: prjID, ProjectCount: 1}
	var pending *deletion
	create := func(ctx context.Context, tx storage.Tx) error {
		var err error
		if pending, err = getDeletion(tx, name); err != nil || pending != nil {
			return err
		}
		if _, err := getOrg(tx, name); err == nil {
			return fmt.Errorf("organization %q: %w", name, keel.ErrAlreadyExists)
		} else if !errors.Is(err, keel.ErrNotFound) {
			return err
		}
		if err := putJSON(tx, orgKey(name), rec); err != nil {
			return err
		}
		p := prjRecord{ID: prjID, Org: name, Name: DefaultProjectName, CreatedAt: now}
		if err := putJSON(tx, prjKey(prjID), p); err != nil {
			return err
		}
		return tx.Put(prjNames(name)+fold(p.Name), []byte(prjID))
	}
	err := c.store.Update(ctx, create)
	if err == nil && pending != nil {
		// The name is still being deleted: finish that deletion, then
		// create. Another deletion cannot start meanwhile, as the name
		// has no organization.
		if err := c.finish(ctx, name, *pending); err != nil {
			return Organization{}, err
		}
		err = c.store.Update(ctx, create)
		if err == nil && pending != nil {
			err = fmt.Errorf("organization %q is being deleted: %w", name, keel.ErrConflict)
		}
	}
	if err != nil {
		return Organization{}, err
	}
	return rec.public(), nil
}

// Organization returns the organization name. It needs read on
// "organizations/<name>"; without it the organization is not found.
func (c *Catalog) Organization(ctx context.Context, name string) (Organization, error) {
	var rec *orgRecord
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		rec, err = c.visibleOrg(ctx, tx, name, keel.CapRead)
		return err
	})
	if err != nil {
		return Organization{}, err
	}
	return rec.public(), nil
}

// OrganizationExists reports whether the organization exists, without
// asking the Authorizer: packages that keep data per organization (policy)
// use it and apply their own rights.
func (c *Catalog) OrganizationExists(ctx context.Context, name string) (bool, error) {
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := getOrg(tx, name)
		return err
	})
	if errors.Is(err, keel.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// visibleOrg returns the organization, or keel.KindNotFound when it does
// not exist or the caller lacks capability on it.
func (c *Catalog) visibleOrg(ctx context.Context, tx storage.Tx, name string, capability keel.Capability) (*orgRecord, error) {
	rec, err := getOrg(tx, name)
	if err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, c.authz, capability, orgResource(name)); err != nil {
		return nil, hide(err, "organization "+name)
	}
	return rec, nil
}

// hide turns a refusal into keel.KindNotFound, so that existence does not
// leak; other errors pass unchanged.
func hide(err error, what string) error {
	if errors.Is(err, keel.ErrForbidden) {
		return fmt.Errorf("no %s: %w", what, keel.ErrNotFound)
	}
	return err
}

// Organizations lists the organizations in name order. It needs list on
// "organizations".
func (c *Catalog) Organizations(ctx context.Context) ([]Organization, error) {
	if err := keel.Authorize(ctx, c.authz, keel.CapList, orgsResource()); err != nil {
		return nil, err
	}
	out := []Organization{}
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = out[:0]
		return tx.Scan(orgPrefix, storage.ScanOptions{}, func(key string, _ []byte) error {
			rec, err := getOrg(tx, key[len(orgPrefix):])
			if err != nil {
				return err
			}
			out = append(out, rec.public())
			return nil
		})
	})
	return out, err
}

// DeleteOrganization deletes the organization and everything it holds:
// projects, workspaces, teams and team access, and the data of every
// service registered with the Catalog (policies and policy sets, see
// Register). It needs delete on "organizations/<name>"; without it the
// organization is not found, and the store is left as it was.
//
// The organization reads as not found as soon as the deletion starts, in
// one transaction; its keys are then deleted in as many transactions as
// the store's limits require. When that stops midway (an error, a crash),
// DeleteOrganization returns the error and the organization keeps reading
// as not found; calling DeleteOrganization again, with the same right,
// finishes the deletion (as CreateOrganization of the name and
// FinishDeletions do) and returns nil.
func (c *Catalog) DeleteOrganization(ctx context.Context, name string) error {
	d, err := c.startDeletion(ctx, name)
	if err != nil {
		return err
	}
	return c.finish(ctx, name, d)
}

// Team is a team of an organization as read.
type Team struct {
	ID   string
	Org  string
	Name string
}

// TeamAccess is one team's access to a project.
type TeamAccess struct {
	TeamID    string
	ProjectID string
	// Access is the level, as HCP Terraform names them ("read",
	// "write", "maintain", "admin", "custom").
	Access string
}

// Team access levels, as HCP Terraform names them.
var accessLevels = []string{"read", "write", "maintain", "admin", "custom"}

// CreateTeam creates a team in org. It needs create on
// "organizations/<org>/teams". The name ("Name") is required, letters,
// digits, "-" and "_", unique in the organization ignoring case.
func (c *Catalog) CreateTeam(ctx context.Context, org, name string) (Team, error) {
	if err := slugError(name, 0); err != nil {
		return Team{}, err
	}
	rec := teamRecord{ID: NewID("team"), Org: org, Name: name}
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if _, err := getOrg(tx, org); err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapCreate, teamsResource(org)); err != nil {
			return err
		}
		if id, err := lookup(tx, teamNames(org)+fold(name)); err != nil {
			return err
		} else if id != "" {
			return fmt.Errorf("team %q: %w", name, keel.ErrAlreadyExists)
		}
		if err := putJSON(tx, teamKey(rec.ID), rec); err != nil {
			return err
		}
		return tx.Put(teamNames(org)+fold(name), []byte(rec.ID))
	})
	if err != nil {
		return Team{}, err
	}
	return Team(rec), nil
}

// Team returns the team id. It needs read on "organizations/<org>/teams";
// without it the team is not found.
func (c *Catalog) Team(ctx context.Context, id string) (Team, error) {
	var rec *teamRecord
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if rec, err = getTeam(tx, id); err != nil {
			return err
		}
		if err := liveOrg(tx, rec.Org, "team "+id); err != nil {
			return err
		}
		return hide(keel.Authorize(ctx, c.authz, keel.CapRead, teamsResource(rec.Org)), "team "+id)
	})
	if err != nil {
		return Team{}, err
	}
	return Team(*rec), nil
}

// SetTeamAccess gives a team access to a project, or changes its level
// (access; "" means "read"). It needs manage-projects on the project;
// without read on it the project is not found. The project and the team
// are required ("ProjectID", "TeamID"), the level must be one of HCP
// Terraform's ("Access"), all checked at once, and the team must be of
// the project's organization ("TeamID").
func (c *Catalog) SetTeamAccess(ctx context.Context, projectID, teamID, access string) (TeamAccess, error) {
	if access == "" {
		access = "read"
	}
	var v keel.Validation
	if projectID == "" {
		v.Add("ProjectID", "is required")
	}
	if teamID == "" {
		v.Add("TeamID", "is required")
	}
	if !slices.Contains(accessLevels, access) {
		v.Add("Access", "must be one of %s", strings.Join(accessLevels, ", "))
	}
	if err := v.Err(); err != nil {
		return TeamAccess{}, err
	}
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapManageProjects, projectResource(p.Org, p.ID)); err != nil {
			return err
		}
		t, err := getTeam(tx, teamID)
		if err != nil || t.Org != p.Org {
			return keel.Invalid("TeamID", "no team %q in organization %q", teamID, p.Org)
		}
		key := prjAccess(p.Org, p.ID) + t.ID
		old, err := lookup(tx, key)
		if err != nil {
			return err
		}
		if old == "" {
			p.TeamCount++
			if err := putJSON(tx, prjKey(p.ID), p); err != nil {
				return err
			}
		}
		return tx.Put(key, []byte(access))
	})
	if err != nil {
		return TeamAccess{}, err
	}
	return TeamAccess{TeamID: teamID, ProjectID: projectID, Access: access}, nil
}

// RemoveTeamAccess takes a team's access to a project away. It needs
// manage-projects on the project; a team without access is
// keel.KindNotFound.
func (c *Catalog) RemoveTeamAccess(ctx context.Context, projectID, teamID string) error {
	return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapManageProjects, projectResource(p.Org, p.ID)); err != nil {
			return err
		}
		key := prjAccess(p.Org, p.ID) + teamID
		if old, err := lookup(tx, key); err != nil {
			return err
		} else if old == "" || !validID(teamID) {
			return fmt.Errorf("team %q has no access to project %q: %w", teamID, projectID, keel.ErrNotFound)
		}
		p.TeamCount--
		if err := putJSON(tx, prjKey(p.ID), p); err != nil {
			return err
		}
		return tx.Delete(key)
	})
}

// TeamAccesses lists the teams with access to a project, by team id.
func (c *Catalog) TeamAccesses(ctx context.Context, projectID string) ([]TeamAccess, error) {
	out := []TeamAccess{}
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		prefix := prjAccess(p.Org, p.ID)
		return tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			out = append(out, TeamAccess{TeamID: key[len(prefix):], ProjectID: p.ID, Access: string(v)})
			return nil
		})
	})
	return out, err
}

// Workspace is a workspace as read.
type Workspace struct {
	ID        string
	Org       string
	Name      string
	ProjectID string
	CreatedAt time.Time
}

func (r *wsRecord) public() Workspace { return Workspace(*r) }

// maxWorkspaceName is HCP Terraform's limit on workspace names.
const maxWorkspaceName = 90

// CreateWorkspace creates a workspace in a project of org (the default
// project when projectID is ""). It needs create on
// "organizations/<org>/projects/<project>/workspaces". The name ("Name")
// is required, at most 90 letters, digits, "-" and "_", unique in the
// organization ignoring case; the project ("ProjectID") must be of org.
func (c *Catalog) CreateWorkspace(ctx context.Context, org, name, projectID string) (Workspace, error) {
	if err := slugError(name, maxWorkspaceName); err != nil {
		return Workspace{}, err
	}
	rec := wsRecord{ID: NewID("ws"), Org: org, Name: name, CreatedAt: c.clock.Now().UTC()}
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		o, err := getOrg(tx, org)
		if err != nil {
			return err
		}
		rec.ProjectID = projectID
		if rec.ProjectID == "" {
			rec.ProjectID = o.DefaultProject
		}
		p, err := getProject(tx, rec.ProjectID)
		if err != nil || p.Org != org {
			return keel.Invalid("ProjectID", "no project %q in organization %q", rec.ProjectID, org)
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapCreate, wsCreateResource(org, p.ID)); err != nil {
			return err
		}
		if id, err := lookup(tx, wsNames(org)+fold(name)); err != nil {
			return err
		} else if id != "" {
			return fmt.Errorf("workspace %q: %w", name, keel.ErrAlreadyExists)
		}
		p.WorkspaceCount++
		if err := putJSON(tx, prjKey(p.ID), p); err != nil {
			return err
		}
		if err := putJSON(tx, wsKey(rec.ID), rec); err != nil {
			return err
		}
		if err := tx.Put(wsNames(org)+fold(name), []byte(rec.ID)); err != nil {
			return err
		}
		return tx.Put(prjWorkspaces(org, p.ID)+rec.ID, nil)
	})
	if err != nil {
		return Workspace{}, err
	}
	return rec.public(), nil
}

// Workspace returns the workspace id. It needs read on
// "organizations/<org>/workspaces/<id>"; without it the workspace is not
// found.
func (c *Catalog) Workspace(ctx context.Context, id string) (Workspace, error) {
	var rec *wsRecord
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		rec, err = c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		return err
	})
	if err != nil {
		return Workspace{}, err
	}
	return rec.public(), nil
}

// WorkspaceByName returns the workspace of org named name, ignoring case,
// with the rights of Workspace.
func (c *Catalog) WorkspaceByName(ctx context.Context, org, name string) (Workspace, error) {
	var rec *wsRecord
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		id, err := lookup(tx, wsNames(org)+fold(name))
		if err != nil {
			return err
		}
		if id == "" || !validID(org) || !validID(name) {
			return fmt.Errorf("no workspace %q in organization %q: %w", name, org, keel.ErrNotFound)
		}
		rec, err = c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		return err
	})
	if err != nil {
		return Workspace{}, err
	}
	return rec.public(), nil
}

func (c *Catalog) visibleWorkspace(ctx context.Context, tx storage.Tx, id string, capability keel.Capability) (*wsRecord, error) {
	rec, err := getWorkspace(tx, id)
	if err != nil {
		return nil, err
	}
	if err := liveOrg(tx, rec.Org, "workspace "+id); err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, c.authz, capability, workspaceResource(rec.Org, id)); err != nil {
		return nil, hide(err, "workspace "+id)
	}
	return rec, nil
}

// Workspaces lists the workspaces of a project, sorted by name. It needs
// read on the project; each workspace is listed whatever the caller's
// rights on it.
func (c *Catalog) Workspaces(ctx context.Context, projectID string) ([]Workspace, error) {
	out := []Workspace{}
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = out[:0]
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		ids, err := keysUnder(tx, prjWorkspaces(p.Org, p.ID))
		if err != nil {
			return err
		}
		for _, id := range ids {
			w, err := getWorkspace(tx, id)
			if err != nil {
				return fmt.Errorf("workspace index of project %q: %v: %w", p.ID, err, keel.ErrInternal)
			}
			out = append(out, w.public())
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return fold(out[i].Name) < fold(out[j].Name) })
	return out, err
}

// DeleteWorkspace deletes a workspace. It needs delete on
// "organizations/<org>/workspaces/<id>"; without read on it the workspace
// is not found.
func (c *Catalog) DeleteWorkspace(ctx context.Context, id string) error {
	return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		w, err := c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapDelete, workspaceResource(w.Org, id)); err != nil {
			return err
		}
		p, err := getProject(tx, w.ProjectID)
		if err != nil {
			return fmt.Errorf("project of workspace %q: %v: %w", id, err, keel.ErrInternal)
		}
		p.WorkspaceCount--
		if err := putJSON(tx, prjKey(p.ID), p); err != nil {
			return err
		}
		for _, k := range []string{wsKey(id), wsNames(w.Org) + fold(w.Name), prjWorkspaces(w.Org, p.ID) + id} {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
