package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// Team visibilities, as HCP Terraform names them.
const (
	visibilitySecret       = "secret" // the default
	visibilityOrganization = "organization"
)

var organizationAccessNames = []string{
	"access-secret-teams", "delegate-policy-overrides", "manage-agent-pools", "manage-membership",
	"manage-modules", "manage-organization-access", "manage-policies", "manage-policy-overrides",
	"manage-projects", "manage-providers", "manage-run-tasks", "manage-teams", "manage-vcs-settings",
	"manage-workspaces", "read-projects", "read-workspaces",
}

// TeamSettings are the settings of a team that keel keeps. In an input a
// nil field was not sent (create: the default; update: unchanged); in a
// Team as read every field is set.
//
// keel stores them and enforces none of them: the caller's rights come
// from the Authorizer, not from a team's organization access.
type TeamSettings struct {
	// Visibility is "secret" (the default) or "organization".
	Visibility *string
	// AllowMemberTokenManagement defaults to true.
	AllowMemberTokenManagement *bool
	// SSOTeamID is "" by default.
	SSOTeamID *string
	// OrganizationAccess holds organization-level permissions by their
	// names in HCP Terraform (manage-policies, manage-workspaces, ...:
	// the list is in the package's doc); those sent are changed, the
	// others kept; every name is false until set.
	OrganizationAccess map[string]bool
}

func (s TeamSettings) resolved() TeamSettings {
	if s.Visibility == nil {
		s.Visibility = ptrTo(visibilitySecret)
	}
	if s.AllowMemberTokenManagement == nil {
		s.AllowMemberTokenManagement = ptrTo(true)
	}
	if s.SSOTeamID == nil {
		s.SSOTeamID = ptrTo("")
	}
	access := map[string]bool{}
	for _, n := range organizationAccessNames {
		access[n] = s.OrganizationAccess[n]
	}
	s.OrganizationAccess = access
	return s
}

func (s *TeamSettings) merge(in TeamSettings) {
	if in.Visibility != nil {
		s.Visibility = in.Visibility
	}
	if in.AllowMemberTokenManagement != nil {
		s.AllowMemberTokenManagement = in.AllowMemberTokenManagement
	}
	if in.SSOTeamID != nil {
		s.SSOTeamID = in.SSOTeamID
	}
	if len(in.OrganizationAccess) > 0 {
		if s.OrganizationAccess == nil {
			s.OrganizationAccess = map[string]bool{}
		} else {
			s.OrganizationAccess = maps.Clone(s.OrganizationAccess)
		}
		maps.Copy(s.OrganizationAccess, in.OrganizationAccess)
	}
}

func (s TeamSettings) validate(v *keel.Validation) {
	if s.Visibility != nil && *s.Visibility != visibilitySecret && *s.Visibility != visibilityOrganization {
		v.Add("Visibility", "must be %s or %s", visibilitySecret, visibilityOrganization)
	}
	for _, k := range slices.Sorted(maps.Keys(s.OrganizationAccess)) {
		if !slices.Contains(organizationAccessNames, k) {
			v.Add(fmt.Sprintf("OrganizationAccess[%q]", k), "is not an organization permission")
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// valueOf is *p, or the zero T when p is nil.
func valueOf[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// OwnersTeamName is the name of the team every organization is created
// with, as HCP Terraform creates its "owners" team.
const OwnersTeamName = "owners"

// Team is a team of an organization as read.
type Team struct {
	ID   string
	Org  string
	Name string
	// Owners reports whether the team is the organization's owners team
	// (OwnersTeamName), created with it: it cannot be deleted or
	// renamed.
	Owners bool
	// Settings has every field set: the value stored, or the default.
	Settings TeamSettings
	// CanDestroy and CanUpdate are the caller's rights on the team;
	// CanDestroy is false for the owners team, which cannot be deleted.
	CanDestroy bool
	CanUpdate  bool
}

// TeamRequest is the input of CreateTeam and UpdateTeam: a nil field is
// not given (create: the default; update: left as it is).
type TeamRequest struct {
	// Name is required by CreateTeam; given to UpdateTeam, it renames the
	// team, with the same rules.
	Name *string
	TeamSettings
}

func (c *Catalog) publicTeam(ctx context.Context, r *teamRecord) (Team, error) {
	t := Team{ID: r.ID, Org: r.Org, Name: r.Name, Owners: r.Owners, Settings: r.Settings.resolved()}
	var err error
	if t.CanUpdate, err = c.may(ctx, keel.CapUpdate, teamsResource(r.Org)); err != nil {
		return Team{}, err
	}
	if t.CanDestroy, err = c.may(ctx, keel.CapDelete, teamsResource(r.Org)); err != nil {
		return Team{}, err
	}
	t.CanDestroy = t.CanDestroy && !r.Owners
	return t, nil
}

// ownersTeam is the record of the owners team of a new organization org:
// every organization permission set, as organization owners hold them
// all in HCP Terraform.
func ownersTeam(id, org string) teamRecord {
	access := map[string]bool{}
	for _, n := range organizationAccessNames {
		access[n] = true
	}
	return teamRecord{ID: id, Org: org, Name: OwnersTeamName, Owners: true, Settings: TeamSettings{OrganizationAccess: access}}
}

// CreateTeam creates the team r.Name in org, with the settings given (nil
// fields: the defaults). It needs create on "organizations/<org>/teams"; an
// organization the caller cannot read is not found. The name ("Name") is
// required, letters, digits, "-" and "_", unique in the organization
// ignoring case; Visibility is secret or organization; OrganizationAccess
// holds only the organization permissions of HCP Terraform.
func (c *Catalog) CreateTeam(ctx context.Context, org string, r TeamRequest) (_ Team, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.CreateTeam", org, r, func(ctx context.Context) (Team, error) {
		return c.createTeam(ctx, org, r)
	})
}

func (c *Catalog) createTeam(ctx context.Context, org string, r TeamRequest) (_ Team, err error) {
	defer prefixErr(&err)
	name := valueOf(r.Name)
	var v keel.Validation
	if err := slugError(name, 0); err != nil {
		v.Add("Name", "%s", keel.FieldErrors(err)[0].Rule)
	}
	var s TeamSettings
	s.merge(r.TeamSettings)
	s.validate(&v)
	invalid := v.Err()
	rec := teamRecord{ID: newID("team"), Org: org, Name: name, Settings: s}
	var out Team
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if _, err := c.visibleOrg(ctx, tx, org, keel.CapRead); err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapCreate, teamsResource(org)); err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		if id, err := lookup(tx, teamNames(org)+fold(name)); err != nil {
			return err
		} else if id != "" {
			return fmt.Errorf("team %q: %w", name, keel.KindAlreadyExists)
		}
		if err := putJSON(tx, teamKey(rec.ID), rec); err != nil {
			return err
		}
		if err := tx.Put(teamNames(org)+fold(name), []byte(rec.ID)); err != nil {
			return err
		}
		var err error
		out, err = c.publicTeam(ctx, &rec)
		return err
	})
	return out, err
}

// visibleTeam returns the team id, or keel.KindNotFound when it does not
// exist, its organization is being deleted, or the caller lacks read on
// "organizations/<org>/teams".
func (c *Catalog) visibleTeam(ctx context.Context, tx storage.Tx, id string) (*teamRecord, error) {
	rec, err := getTeam(tx, id)
	if err != nil {
		return nil, err
	}
	if err := liveOrg(tx, rec.Org, "team", id); err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, c.authz, keel.CapRead, teamsResource(rec.Org)); err != nil {
		return nil, hide(err, "team", id)
	}
	return rec, nil
}

// GetTeam returns the team id. It needs read on "organizations/<org>/teams";
// without it the team is not found.
func (c *Catalog) GetTeam(ctx context.Context, id string) (_ Team, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.GetTeam", id, nil, func(ctx context.Context) (Team, error) {
		return c.doGetTeam(ctx, id)
	})
}

func (c *Catalog) doGetTeam(ctx context.Context, id string) (_ Team, err error) {
	defer prefixErr(&err)
	var out Team
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleTeam(ctx, tx, id)
		if err != nil {
			return err
		}
		out, err = c.publicTeam(ctx, rec)
		return err
	})
	return out, err
}

// UpdateTeam renames the team and changes the settings sent. It needs
// update on "organizations/<org>/teams" (keel.KindForbidden without it);
// a team the caller cannot read is not found. The rules are CreateTeam's;
// a name taken by another team is keel.KindAlreadyExists. The owners team
// keeps its name ("Name"), so that clients find it by it.
func (c *Catalog) UpdateTeam(ctx context.Context, id string, in TeamRequest) (_ Team, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.UpdateTeam", id, in, func(ctx context.Context) (Team, error) {
		return c.updateTeam(ctx, id, in)
	})
}

func (c *Catalog) updateTeam(ctx context.Context, id string, in TeamRequest) (_ Team, err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if in.Name != nil {
		if err := slugError(*in.Name, 0); err != nil {
			v.Add("Name", "%s", keel.FieldErrors(err)[0].Rule)
		}
	}
	in.validate(&v)
	invalid := v.Err()
	var out Team
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleTeam(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapUpdate, teamsResource(rec.Org)); err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		if rec.Owners && in.Name != nil && *in.Name != rec.Name {
			return keel.Invalid("Name", "cannot be changed: the owners team keeps its name")
		}
		if in.Name != nil && *in.Name != rec.Name {
			key := teamNames(rec.Org) + fold(*in.Name)
			if other, err := lookup(tx, key); err != nil {
				return err
			} else if other != "" && other != id {
				return fmt.Errorf("team %q: %w", *in.Name, keel.KindAlreadyExists)
			}
			if err := tx.Delete(teamNames(rec.Org) + fold(rec.Name)); err != nil {
				return err
			}
			if err := tx.Put(key, []byte(id)); err != nil {
				return err
			}
			rec.Name = *in.Name
		}
		rec.Settings.merge(in.TeamSettings)
		if err := putJSON(tx, teamKey(id), rec); err != nil {
			return err
		}
		out, err = c.publicTeam(ctx, rec)
		return err
	})
	return out, err
}

// DeleteTeam deletes the team and its access to every project (whose team
// counts drop). It needs delete on "organizations/<org>/teams"
// (keel.KindForbidden without it); a team the caller cannot read is not
// found; the owners team cannot be deleted (keel.KindConflict), as HCP
// Terraform refuses it. One transaction deletes the team; its access, to
// any number of projects, is deleted after, in as many transactions as
// the store needs (an interrupted run is finished by FinishDeletions).
func (c *Catalog) DeleteTeam(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.DeleteTeam", id, nil, func(ctx context.Context) error {
		return c.deleteTeam(ctx, id)
	})
}

func (c *Catalog) deleteTeam(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	var org string
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleTeam(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapDelete, teamsResource(rec.Org)); err != nil {
			return err
		}
		if rec.Owners {
			return fmt.Errorf("team %q is the owners team of %q, which cannot be deleted: %w", id, rec.Org, keel.KindConflict)
		}
		org = rec.Org
		if err := tx.Delete(teamNames(rec.Org) + fold(rec.Name)); err != nil {
			return err
		}
		if err := tx.Delete(teamKey(id)); err != nil {
			return err
		}
		return tx.Put(cleanupKey(cleanupTeam, id), []byte(rec.Org))
	})
	if err != nil {
		return err
	}
	return c.finishCleanup(ctx, cleanupTeam, org, id)
}

// Team access levels, as HCP Terraform names them.
var accessLevels = []string{"read", "write", "maintain", "admin", "custom"}

// ProjectAccess is the project part of a custom access level, as HCP
// Terraform names its values.
type ProjectAccess struct {
	Settings     string // read (the default), update, delete
	Teams        string // none (the default), read, manage
	VariableSets string // none (the default), read, write
}

// WorkspaceAccess is the workspace part of a custom access level, as HCP
// Terraform names its values; the booleans default to false.
type WorkspaceAccess struct {
	Runs            string // read (the default), plan, apply
	SentinelMocks   string // none (the default), read
	StateVersions   string // none (the default), read-outputs, read, write
	Variables       string // none (the default), read, write
	Create          bool
	Locking         bool
	Move            bool
	Delete          bool
	RunTasks        bool
	PolicyOverrides bool
}

// TeamAccess is one team's access to a project.
type TeamAccess struct {
	TeamID    string
	ProjectID string
	// Access is the level, as HCP Terraform names them ("read",
	// "write", "maintain", "admin", "custom").
	Access string
	// ProjectAccess and WorkspaceAccess are the permissions of a custom
	// level: read, they are set for every level (the custom defaults
	// when the level is not custom); in an input they are used for
	// "custom" only, an empty string keeping the value in force.
	ProjectAccess   *ProjectAccess
	WorkspaceAccess *WorkspaceAccess
}

// accessRecord is a team's access as stored at ix/<org>/access/<prj>/<team>:
// JSON, or (written before custom levels) the bare level.
type accessRecord struct {
	Access    string          `json:"access"`
	Project   ProjectAccess   `json:"project"`
	Workspace WorkspaceAccess `json:"workspace"`
}

func defaultCustom() accessRecord {
	return accessRecord{
		Project:   ProjectAccess{Settings: "read", Teams: "none", VariableSets: "none"},
		Workspace: WorkspaceAccess{Runs: "read", SentinelMocks: "none", StateVersions: "none", Variables: "none"},
	}
}

func decodeAccess(raw []byte) accessRecord {
	rec := defaultCustom()
	if len(raw) > 0 && raw[0] == '{' {
		if json.Unmarshal(raw, &rec) == nil {
			return rec
		}
	}
	rec.Access = string(raw)
	return rec
}

func (r accessRecord) public(team, prj string) TeamAccess {
	p, w := r.Project, r.Workspace
	return TeamAccess{TeamID: team, ProjectID: prj, Access: r.Access, ProjectAccess: &p, WorkspaceAccess: &w}
}

// apply sets in r the custom permissions of in that are sent, recording
// broken rules in v.
func (r *accessRecord) apply(v *keel.Validation, in TeamAccess) {
	check := func(field string, dst *string, val string, allowed ...string) {
		if val == "" {
			return
		}
		if !slices.Contains(allowed, val) {
			v.Add(field, "must be one of %s", strings.Join(allowed, ", "))
			return
		}
		*dst = val
	}
	if p := in.ProjectAccess; p != nil {
		check("ProjectAccess.Settings", &r.Project.Settings, p.Settings, "read", "update", "delete")
		check("ProjectAccess.Teams", &r.Project.Teams, p.Teams, "none", "read", "manage")
		check("ProjectAccess.VariableSets", &r.Project.VariableSets, p.VariableSets, "none", "read", "write")
	}
	if w := in.WorkspaceAccess; w != nil {
		check("WorkspaceAccess.Runs", &r.Workspace.Runs, w.Runs, "read", "plan", "apply")
		check("WorkspaceAccess.SentinelMocks", &r.Workspace.SentinelMocks, w.SentinelMocks, "none", "read")
		check("WorkspaceAccess.StateVersions", &r.Workspace.StateVersions, w.StateVersions, "none", "read-outputs", "read", "write")
		check("WorkspaceAccess.Variables", &r.Workspace.Variables, w.Variables, "none", "read", "write")
		r.Workspace.Create, r.Workspace.Locking, r.Workspace.Move = w.Create, w.Locking, w.Move
		r.Workspace.Delete, r.Workspace.RunTasks, r.Workspace.PolicyOverrides = w.Delete, w.RunTasks, w.PolicyOverrides
	}
}

// PutTeamAccess gives a team access to a project, or changes it (in.Access
// "" means "read"; in.ProjectAccess and in.WorkspaceAccess are used when
// the level is "custom"). It needs manage-projects on the project;
// without read on it the project is not found. The project and the team
// are required ("ProjectID", "TeamID"), the level must be one of HCP
// Terraform's ("Access") and the custom values theirs
// ("WorkspaceAccess.Runs", ...), all checked at once, and the team must
// be of the project's organization and one the caller may read (read on
// "organizations/<org>/teams") ("TeamID": one the caller may not read is
// refused as a missing one, so that the answer does not tell whether it
// exists).
func (c *Catalog) PutTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.PutTeamAccess", "", in, func(ctx context.Context) (TeamAccess, error) {
		return c.putTeamAccess(ctx, in)
	})
}

func (c *Catalog) putTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return c.setTeamAccess(ctx, in, accessPut)
}

// CreateTeamAccess gives a team access to a project it has no access to,
// as HCP Terraform's add: with the rules and rights of PutTeamAccess, an
// access the team already has is refused (keel.KindAlreadyExists) and
// left as it is.
func (c *Catalog) CreateTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.CreateTeamAccess", "", in, func(ctx context.Context) (TeamAccess, error) {
		return c.createTeamAccess(ctx, in)
	})
}

func (c *Catalog) createTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return c.setTeamAccess(ctx, in, accessAdd)
}

// UpdateTeamAccess changes an existing access of a team to a project,
// with the rules of PutTeamAccess; a team without access to the project
// is keel.KindNotFound. An empty in.Access keeps the level.
func (c *Catalog) UpdateTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.UpdateTeamAccess", "", in, func(ctx context.Context) (TeamAccess, error) {
		return c.updateTeamAccess(ctx, in)
	})
}

func (c *Catalog) updateTeamAccess(ctx context.Context, in TeamAccess) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return c.setTeamAccess(ctx, in, accessUpdate)
}

// accessMode is what setTeamAccess does with an access the team has, or
// has not.
type accessMode int

const (
	accessPut    accessMode = iota // give or change
	accessAdd                      // give; an existing access is refused
	accessUpdate                   // change; a missing access is not found
)

func (c *Catalog) setTeamAccess(ctx context.Context, in TeamAccess, mode accessMode) (TeamAccess, error) {
	existing := mode == accessUpdate
	var v keel.Validation
	if in.ProjectID == "" {
		v.Add("ProjectID", "is required")
	}
	if in.TeamID == "" {
		v.Add("TeamID", "is required")
	}
	if in.Access != "" && !slices.Contains(accessLevels, in.Access) {
		v.Add("Access", "must be one of %s", strings.Join(accessLevels, ", "))
	}
	probe := defaultCustom()
	probe.apply(&v, in)
	if err := v.Err(); err != nil {
		return TeamAccess{}, err
	}
	var out TeamAccess
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, in.ProjectID)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapManageProjects, projectResource(p.Org, p.ID)); err != nil {
			return err
		}
		t, err := getTeam(tx, in.TeamID)
		if err == nil && t.Org != p.Org {
			err = keel.KindNotFound
		}
		if err == nil {
			// A team the caller may not read (read on the teams of
			// the organization, as Team asks) answers as a missing
			// one, so that the answer tells nothing of it.
			err = hide(keel.Authorize(ctx, c.authz, keel.CapRead, teamsResource(p.Org)), "team", t.ID)
		}
		if err != nil && !errors.Is(err, keel.KindNotFound) {
			return err
		}
		if err != nil {
			if existing {
				return fmt.Errorf("team %q has no access to project %q: %w", in.TeamID, p.ID, keel.KindNotFound)
			}
			return keel.Invalid("TeamID", "no team %q in organization %q", in.TeamID, p.Org)
		}
		key := prjAccess(p.Org, p.ID) + t.ID
		raw, err := tx.Get(key)
		switch {
		case err == nil:
			if mode == accessAdd {
				return fmt.Errorf("team %q has access to project %q already: %w", t.ID, p.ID, keel.KindAlreadyExists)
			}
		case !isMissing(err):
			return err
		case existing:
			return fmt.Errorf("team %q has no access to project %q: %w", in.TeamID, p.ID, keel.KindNotFound)
		default:
			p.TeamCount++
			if err := putJSON(tx, prjKey(p.ID), p); err != nil {
				return err
			}
		}
		rec := defaultCustom()
		if raw != nil {
			rec = decodeAccess(raw)
		}
		switch {
		case in.Access != "":
			rec.Access = in.Access
		case rec.Access == "":
			rec.Access = "read"
		}
		if rec.Access == "custom" {
			var v keel.Validation
			rec.apply(&v, in)
		}
		if err := putJSON(tx, key, rec); err != nil {
			return err
		}
		out = rec.public(t.ID, p.ID)
		return nil
	})
	return out, err
}

// GetTeamAccess returns the access of the team teamID to the project
// projectID. It needs read on the project; a team without access is
// keel.KindNotFound.
func (c *Catalog) GetTeamAccess(ctx context.Context, projectID, teamID string) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.GetTeamAccess", projectID, teamID, func(ctx context.Context) (TeamAccess, error) {
		return c.getTeamAccess(ctx, projectID, teamID)
	})
}

func (c *Catalog) getTeamAccess(ctx context.Context, projectID, teamID string) (_ TeamAccess, err error) {
	defer prefixErr(&err)
	var out TeamAccess
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		raw, err := tx.Get(prjAccess(p.Org, p.ID) + teamID)
		if isMissing(err) || !validID(teamID) {
			return fmt.Errorf("team %q has no access to project %q: %w", teamID, projectID, keel.KindNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Get(cleanupKey(cleanupTeam, teamID)); err == nil {
			return fmt.Errorf("team %q has no access to project %q (deleted): %w", teamID, projectID, keel.KindNotFound)
		} else if !isMissing(err) {
			return err
		}
		out = decodeAccess(raw).public(teamID, p.ID)
		return nil
	})
	return out, err
}

// DeleteTeamAccess takes a team's access to a project away. It needs
// read on the project (without it the project is not found),
// manage-projects on it, and read on the team ("organizations/<org>/teams",
// as Team asks). A team the caller may not read answers as a team without
// access, keel.KindNotFound, whether it exists and has access or not, so
// that the answer tells nothing of it; so does a team that does not
// exist, is of another organization or is being deleted.
func (c *Catalog) DeleteTeamAccess(ctx context.Context, projectID, teamID string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.DeleteTeamAccess", projectID, teamID, func(ctx context.Context) error {
		return c.deleteTeamAccess(ctx, projectID, teamID)
	})
}

func (c *Catalog) deleteTeamAccess(ctx context.Context, projectID, teamID string) (err error) {
	defer prefixErr(&err)
	return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapManageProjects, projectResource(p.Org, p.ID)); err != nil {
			return err
		}
		noAccess := fmt.Errorf("team %q has no access to project %q: %w", teamID, projectID, keel.KindNotFound)
		t, err := getTeam(tx, teamID)
		if err == nil && t.Org != p.Org {
			err = keel.KindNotFound
		}
		if err == nil {
			// A team the caller may not read answers as one without
			// access, as in setTeamAccess.
			err = hide(keel.Authorize(ctx, c.authz, keel.CapRead, teamsResource(p.Org)), "team", t.ID)
		}
		if errors.Is(err, keel.KindNotFound) {
			return noAccess
		}
		if err != nil {
			return err
		}
		key := prjAccess(p.Org, p.ID) + t.ID
		if old, err := lookup(tx, key); err != nil {
			return err
		} else if old == "" {
			return noAccess
		}
		p.TeamCount--
		if err := putJSON(tx, prjKey(p.ID), p); err != nil {
			return err
		}
		return tx.Delete(key)
	})
}

// ListTeamAccessesRequest asks for one page of the teams with access to a
// project.
type ListTeamAccessesRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: DefaultPageSize; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the list (0, the default: its first access): a transport renders
	// numbered pages with it. It is at least 0.
	Offset int
}

// ListTeamAccesses returns one page of the teams with access to a
// project, by team id (the cursor of an access is its team id), with
// Total and Matching both the number of teams with access. It needs read
// on the project. A page past the end is empty. The access of a team
// being deleted (see DeleteTeam) is not listed.
func (c *Catalog) ListTeamAccesses(ctx context.Context, projectID string, r ListTeamAccessesRequest) (_ keel.CountedPage[TeamAccess], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.ListTeamAccesses", projectID, r, func(ctx context.Context) (keel.CountedPage[TeamAccess], error) {
		return c.listTeamAccesses(ctx, projectID, r)
	})
}

func (c *Catalog) listTeamAccesses(ctx context.Context, projectID string, r ListTeamAccessesRequest) (_ keel.CountedPage[TeamAccess], err error) {
	defer prefixErr(&err)
	var out keel.CountedPage[TeamAccess]
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.CountedPage[TeamAccess]{Page: keel.Page[TeamAccess]{Items: []TeamAccess{}}}
		p, err := c.visibleProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		pg, err := pager.New(r.ListRequest, r.Offset, false, DefaultPageSize, MaxPageSize)
		if err != nil {
			return err
		}
		gone, err := teamsCleanedUp(tx)
		if err != nil {
			return err
		}
		prefix := prjAccess(p.Org, p.ID)
		err = tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			team := key[len(prefix):]
			if gone[team] {
				return nil
			}
			if pg.Take(team) {
				out.Items = append(out.Items, decodeAccess(v).public(team, p.ID))
			}
			return nil
		})
		out.Total, out.Matching, out.Next = pg.Seen, pg.Seen, pg.Next()
		return err
	})
	return out, err
}

// ListTeamsRequest asks for one page of the teams of an organization.
type ListTeamsRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: DefaultPageSize; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the filtered list (0, the default: its first team): a transport
	// renders numbered pages with it. It is at least 0.
	Offset int
	// Names keeps the teams of these names (compared ignoring case);
	// empty keeps every team.
	Names []string
	// Query keeps the teams whose name holds it, ignoring case; with
	// Names, the teams that match both.
	Query string
}

// ListTeams returns one page of the teams of org, in name order (case
// folded), with Total, the teams of the organization, and Matching, those
// the filters keep. It needs read on "organizations/<org>/teams"; without
// it, or without read on the organization, the organization is not found.
// A page past the end is empty.
func (c *Catalog) ListTeams(ctx context.Context, org string, r ListTeamsRequest) (_ keel.CountedPage[Team], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.ListTeams", org, r, func(ctx context.Context) (keel.CountedPage[Team], error) {
		return c.listTeams(ctx, org, r)
	})
}

func (c *Catalog) listTeams(ctx context.Context, org string, r ListTeamsRequest) (_ keel.CountedPage[Team], err error) {
	defer prefixErr(&err)
	want := map[string]bool{}
	for _, n := range r.Names {
		want[fold(n)] = true
	}
	q := fold(r.Query)
	var out keel.CountedPage[Team]
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.CountedPage[Team]{Page: keel.Page[Team]{Items: []Team{}}}
		if _, err := c.visibleOrg(ctx, tx, org, keel.CapRead); err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapRead, teamsResource(org)); err != nil {
			return hide(err, "organization", org)
		}
		pg, err := pager.New(r.ListRequest, r.Offset, false, DefaultPageSize, MaxPageSize)
		if err != nil {
			return err
		}
		prefix := teamNames(org)
		err = tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			out.Total++
			name := key[len(prefix):]
			if len(want) > 0 && !want[name] || !strings.Contains(name, q) || !pg.Take(name) {
				return nil
			}
			rec, err := getTeam(tx, string(v))
			if err != nil {
				return fmt.Errorf("team index of %q: %v: %w", org, err, keel.KindInternal)
			}
			t, err := c.publicTeam(ctx, rec)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, t)
			return nil
		})
		out.Matching, out.Next = pg.Seen, pg.Next()
		return err
	})
	return out, err
}
