package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// WorkspaceSettings are the settings of a workspace that keel keeps, as
// HCP Terraform names them. In an input a nil field was not sent (create:
// HCP Terraform's default; update: unchanged); in a Workspace as read
// every field is set, to the value stored or to the default. keel stores
// them and runs nothing by them.
type WorkspaceSettings struct {
	// Description is "" by default.
	Description *string
	// AllowDestroyPlan defaults to true.
	AllowDestroyPlan *bool
	// AutoApply, AutoApplyRunTrigger, AssessmentsEnabled,
	// GlobalRemoteState and QueueAllRuns default to false.
	AutoApply           *bool
	AutoApplyRunTrigger *bool
	AssessmentsEnabled  *bool
	GlobalRemoteState   *bool
	QueueAllRuns        *bool
	// FileTriggersEnabled, SpeculativeEnabled and
	// StructuredRunOutputEnabled default to true.
	FileTriggersEnabled        *bool
	SpeculativeEnabled         *bool
	StructuredRunOutputEnabled *bool
	// ExecutionMode is "remote" or "local"; keel keeps no agent pools,
	// so "agent" is refused. A workspace without an execution mode of
	// its own follows its organization's DefaultExecutionMode (keel's
	// projects keep no default execution mode): read, ExecutionMode is
	// the mode in force, and SettingOverwrites.ExecutionMode tells
	// whether it is the workspace's own. Sent (or Operations sent), it
	// becomes the workspace's own.
	ExecutionMode *string
	// Operations is the older form of ExecutionMode: true is "remote",
	// false "local". Read, it is whether the mode in force is not
	// "local"; sent with ExecutionMode, the two must agree.
	Operations *bool
	// SettingOverwrites tells which settings are the workspace's own
	// rather than followed from the organization's defaults. Sent,
	// SettingOverwrites.ExecutionMode false drops the workspace's own
	// execution mode (it follows the organization's again), and true
	// needs an execution mode: sent, or the workspace's own already.
	SettingOverwrites *SettingOverwrites
	// AutoDestroyAt is the time HCP Terraform would queue a destroy run
	// at (keel queues none): nil for none, also when read. In an input a
	// zero time clears it.
	AutoDestroyAt *time.Time
	// TerraformVersion, WorkingDirectory, SourceName and SourceURL are ""
	// by default.
	TerraformVersion *string
	WorkingDirectory *string
	SourceName       *string
	SourceURL        *string
	// TriggerPrefixes and TriggerPatterns are empty by default.
	TriggerPrefixes *[]string
	TriggerPatterns *[]string
}

// SettingOverwrites tells which settings of a workspace are its own, as
// HCP Terraform's setting-overwrites does.
type SettingOverwrites struct {
	// ExecutionMode is true when the workspace has an execution mode of
	// its own, false when it follows its organization's default.
	ExecutionMode *bool
}

// mode returns the execution mode sent in s: ExecutionMode, or the one
// Operations names; nil when neither is sent.
func (s WorkspaceSettings) mode() *string {
	switch {
	case s.ExecutionMode != nil:
		return s.ExecutionMode
	case s.Operations == nil:
		return nil
	case *s.Operations:
		return ptrTo(executionRemote)
	}
	return ptrTo(executionLocal)
}

// overwrite returns SettingOverwrites.ExecutionMode as sent, or nil.
func (s WorkspaceSettings) overwrite() *bool {
	if s.SettingOverwrites == nil {
		return nil
	}
	return s.SettingOverwrites.ExecutionMode
}

// resolved returns s, as stored, with every nil field set to HCP
// Terraform's default, the execution mode of a workspace without its own
// set to orgMode, the organization's default.
func (s WorkspaceSettings) resolved(orgMode string) WorkspaceSettings {
	str := func(p **string, d string) {
		if *p == nil {
			*p = &d
		}
	}
	flag := func(p **bool, d bool) {
		if *p == nil {
			*p = &d
		}
	}
	list := func(p **[]string) {
		if *p == nil {
			*p = &[]string{}
		} else {
			l := slices.Clone(**p)
			*p = &l
		}
	}
	str(&s.Description, "")
	flag(&s.AllowDestroyPlan, true)
	flag(&s.AutoApply, false)
	flag(&s.AutoApplyRunTrigger, false)
	flag(&s.AssessmentsEnabled, false)
	flag(&s.GlobalRemoteState, false)
	flag(&s.QueueAllRuns, false)
	flag(&s.FileTriggersEnabled, true)
	flag(&s.SpeculativeEnabled, true)
	flag(&s.StructuredRunOutputEnabled, true)
	own := s.ExecutionMode != nil
	str(&s.ExecutionMode, orgMode)
	s.Operations = ptrTo(*s.ExecutionMode != executionLocal)
	s.SettingOverwrites = &SettingOverwrites{ExecutionMode: &own}
	if s.AutoDestroyAt != nil {
		at := *s.AutoDestroyAt
		s.AutoDestroyAt = &at
	}
	str(&s.TerraformVersion, "")
	str(&s.WorkingDirectory, "")
	str(&s.SourceName, "")
	str(&s.SourceURL, "")
	list(&s.TriggerPrefixes)
	list(&s.TriggerPatterns)
	return s
}

// merge sets in s, as stored, the fields sent in in: an execution mode
// sent (or Operations) becomes the workspace's own, and
// SettingOverwrites.ExecutionMode false drops it. Operations and
// SettingOverwrites are never stored: they are read from ExecutionMode.
func (s *WorkspaceSettings) merge(in WorkspaceSettings) {
	set := func(dst **string, src *string) {
		if src != nil {
			*dst = src
		}
	}
	setB := func(dst **bool, src *bool) {
		if src != nil {
			*dst = src
		}
	}
	setL := func(dst **[]string, src *[]string) {
		if src != nil {
			l := slices.Clone(*src)
			*dst = &l
		}
	}
	set(&s.Description, in.Description)
	setB(&s.AllowDestroyPlan, in.AllowDestroyPlan)
	setB(&s.AutoApply, in.AutoApply)
	setB(&s.AutoApplyRunTrigger, in.AutoApplyRunTrigger)
	setB(&s.AssessmentsEnabled, in.AssessmentsEnabled)
	setB(&s.GlobalRemoteState, in.GlobalRemoteState)
	setB(&s.QueueAllRuns, in.QueueAllRuns)
	setB(&s.FileTriggersEnabled, in.FileTriggersEnabled)
	setB(&s.SpeculativeEnabled, in.SpeculativeEnabled)
	setB(&s.StructuredRunOutputEnabled, in.StructuredRunOutputEnabled)
	set(&s.ExecutionMode, in.mode())
	if o := in.overwrite(); o != nil && !*o {
		s.ExecutionMode = nil
	}
	s.Operations, s.SettingOverwrites = nil, nil
	if in.AutoDestroyAt != nil {
		if in.AutoDestroyAt.IsZero() {
			s.AutoDestroyAt = nil
		} else {
			at := in.AutoDestroyAt.UTC()
			s.AutoDestroyAt = &at
		}
	}
	set(&s.TerraformVersion, in.TerraformVersion)
	set(&s.WorkingDirectory, in.WorkingDirectory)
	set(&s.SourceName, in.SourceName)
	set(&s.SourceURL, in.SourceURL)
	setL(&s.TriggerPrefixes, in.TriggerPrefixes)
	setL(&s.TriggerPatterns, in.TriggerPatterns)
}

// validate records the broken rules of the settings sent in v.
func (s WorkspaceSettings) validate(v *keel.Validation) {
	modes := []string{executionRemote, executionLocal}
	if s.ExecutionMode != nil && !slices.Contains(modes, *s.ExecutionMode) {
		v.Add("ExecutionMode", "must be one of %s (keel keeps no agent pools)", strings.Join(modes, ", "))
	}
	if s.ExecutionMode != nil && s.Operations != nil && (*s.ExecutionMode == executionLocal) == *s.Operations {
		v.Add("Operations", "must agree with the execution mode (true: remote, false: local)")
	}
	if o := s.overwrite(); o != nil && !*o && s.mode() != nil {
		v.Add("SettingOverwrites.ExecutionMode", "cannot be false when an execution mode is sent")
	}
	if s.TriggerPrefixes != nil && s.TriggerPatterns != nil && len(*s.TriggerPrefixes) > 0 && len(*s.TriggerPatterns) > 0 {
		v.Add("TriggerPatterns", "cannot be used with trigger prefixes")
	}
}

// ownModeMissing reports whether s asks for an execution mode of the
// workspace's own (SettingOverwrites.ExecutionMode true) without one:
// none sent, and none stored (stored is the workspace's own, or nil).
func (s WorkspaceSettings) ownModeMissing(stored *string) bool {
	o := s.overwrite()
	return o != nil && *o && s.mode() == nil && stored == nil
}

// The field and rule of ownModeMissing.
const (
	fieldOwnMode = "SettingOverwrites.ExecutionMode"
	ruleOwnMode  = "needs an execution mode: none is sent and the workspace has none of its own"
)

// WorkspacePermissions are the caller's rights on a workspace, as the
// workspace document's "permissions" attribute shows them.
type WorkspacePermissions struct {
	CanUpdate bool // update on the workspace
	// CanDestroy and CanForceDelete are delete on the workspace: keel
	// keeps no state, so a safe delete and a force delete are one.
	CanDestroy     bool
	CanForceDelete bool
}

// Workspace is a workspace as read.
type Workspace struct {
	ID        string
	Org       string
	Name      string
	ProjectID string
	CreatedAt time.Time
	// UpdatedAt is the time of the last update; CreatedAt until then.
	UpdatedAt time.Time
	// Settings has every field set: the value stored, or HCP
	// Terraform's default.
	Settings WorkspaceSettings
	// Permissions are the caller's rights at the time of the read.
	Permissions WorkspacePermissions
}

// WorkspaceRequest is the input of CreateWorkspace and UpdateWorkspace: a
// nil field is not given (create: the default; update: left as it is).
type WorkspaceRequest struct {
	// Name is required by CreateWorkspace; given to UpdateWorkspace, it
	// renames the workspace, with the same rules.
	Name *string
	// ProjectID is the project of the workspace: CreateWorkspace creates
	// it there (nil or "": the organization's default project);
	// UpdateWorkspace moves it there, with the rights of MoveWorkspaces.
	ProjectID *string
	WorkspaceSettings
}

// maxWorkspaceName is HCP Terraform's limit on workspace names.
const maxWorkspaceName = 90

// publicWorkspace is the workspace r, of the organization o, as the
// caller reads it.
func (c *Catalog) publicWorkspace(ctx context.Context, r *wsRecord, o *orgRecord) (Workspace, error) {
	w := Workspace{ID: r.ID, Org: r.Org, Name: r.Name, ProjectID: r.ProjectID, CreatedAt: r.CreatedAt, UpdatedAt: r.CreatedAt,
		Settings: r.Settings.resolved(*o.Settings.resolved().DefaultExecutionMode)}
	if r.UpdatedAt != nil {
		w.UpdatedAt = *r.UpdatedAt
	}
	var err error
	if w.Permissions.CanUpdate, err = c.may(ctx, keel.CapUpdate, workspaceResource(r.Org, r.ID)); err != nil {
		return Workspace{}, err
	}
	if w.Permissions.CanDestroy, err = c.may(ctx, keel.CapDelete, workspaceResource(r.Org, r.ID)); err != nil {
		return Workspace{}, err
	}
	w.Permissions.CanForceDelete = w.Permissions.CanDestroy
	return w, nil
}

// CreateWorkspace creates the workspace r.Name in a project of org
// (r.ProjectID; the default project when it is nil or ""), with the
// settings given (nil fields: HCP Terraform's defaults; see
// WorkspaceSettings). It needs create on
// "organizations/<org>/projects/<project>/workspaces"; an organization the
// caller cannot read is not found. The name ("Name") is required, at most
// 90 letters, digits, "-" and "_", unique in the organization ignoring
// case; the project ("ProjectID") must be of org and, when r.ProjectID
// is given, one the caller may read (read on the project): one it may not
// read is refused as a missing one, so that the answer does not tell
// whether it exists; ExecutionMode is remote or local, Operations agrees
// with it, SettingOverwrites.ExecutionMode is not false with a mode sent
// nor true without one; TriggerPrefixes and TriggerPatterns are not both
// set.
func (c *Catalog) CreateWorkspace(ctx context.Context, org string, r WorkspaceRequest) (_ Workspace, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.CreateWorkspace", org, r, func(ctx context.Context) (Workspace, error) {
		return c.createWorkspace(ctx, org, r)
	})
}

func (c *Catalog) createWorkspace(ctx context.Context, org string, r WorkspaceRequest) (_ Workspace, err error) {
	defer prefixErr(&err)
	name, projectID, settings := valueOf(r.Name), valueOf(r.ProjectID), &r.WorkspaceSettings
	var v keel.Validation
	if err := slugError(name, maxWorkspaceName); err != nil {
		v.Add("Name", "%s", keel.FieldErrors(err)[0].Rule)
	}
	settings.validate(&v)
	if settings.ownModeMissing(nil) {
		v.Add(fieldOwnMode, "%s", ruleOwnMode)
	}
	var s WorkspaceSettings
	s.merge(*settings)
	invalid := v.Err()
	rec := wsRecord{ID: newID("ws"), Org: org, Name: name, CreatedAt: c.clock.Now().UTC(), Settings: s}
	var out Workspace
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		o, err := c.visibleOrg(ctx, tx, org, keel.CapRead)
		if err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		rec.ProjectID = projectID
		if rec.ProjectID == "" {
			rec.ProjectID = o.DefaultProject
		}
		p, err := getProject(tx, rec.ProjectID)
		if err == nil && p.Org != org {
			err = keel.KindNotFound
		}
		if err == nil && projectID != "" {
			// A project named that the caller may not read answers as
			// a missing one, so that the answer tells nothing of it.
			err = hide(keel.Authorize(ctx, c.authz, keel.CapRead, projectResource(org, p.ID)), "project", p.ID)
		}
		if errors.Is(err, keel.KindNotFound) {
			return keel.Invalid("ProjectID", "no project %q in organization %q", rec.ProjectID, org)
		}
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapCreate, wsCreateResource(org, p.ID)); err != nil {
			return err
		}
		if id, err := lookup(tx, wsNames(org)+fold(name)); err != nil {
			return err
		} else if id != "" {
			return fmt.Errorf("workspace %q: %w", name, keel.KindAlreadyExists)
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
		if err := tx.Put(prjWorkspaces(org, p.ID)+rec.ID, nil); err != nil {
			return err
		}
		out, err = c.publicWorkspace(ctx, &rec, o)
		return err
	})
	return out, err
}

// UpdateWorkspace renames the workspace, moves it and changes the
// settings sent, all in one transaction. It needs update on
// "organizations/<org>/workspaces/<id>" (keel.KindForbidden without it);
// a workspace the caller cannot read is not found. A new Name follows the
// rules of CreateWorkspace's (keel.KindAlreadyExists when another
// workspace has it); a ProjectID must be a project of the organization
// the caller may read ("ProjectID"), and a move needs move-workspaces on
// the source and the destination projects (keel.KindForbidden), as
// MoveWorkspaces does. The settings follow the rules of CreateWorkspace's,
// SettingOverwrites.ExecutionMode true needing a mode sent or the
// workspace's own. It sets UpdatedAt.
func (c *Catalog) UpdateWorkspace(ctx context.Context, id string, in WorkspaceRequest) (_ Workspace, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.UpdateWorkspace", id, in, func(ctx context.Context) (Workspace, error) {
		return c.updateWorkspace(ctx, id, in)
	})
}

func (c *Catalog) updateWorkspace(ctx context.Context, id string, in WorkspaceRequest) (_ Workspace, err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if in.Name != nil {
		if err := slugError(*in.Name, maxWorkspaceName); err != nil {
			v.Add("Name", "%s", keel.FieldErrors(err)[0].Rule)
		}
	}
	in.validate(&v)
	invalid := v.Err()
	now := c.clock.Now().UTC()
	var out Workspace
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		w, o, err := c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapUpdate, workspaceResource(w.Org, id)); err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		if in.ownModeMissing(w.Settings.ExecutionMode) {
			return keel.Invalid(fieldOwnMode, "%s", ruleOwnMode)
		}
		if in.Name != nil && *in.Name != w.Name {
			key := wsNames(w.Org) + fold(*in.Name)
			if other, err := lookup(tx, key); err != nil {
				return err
			} else if other != "" && other != id {
				return fmt.Errorf("workspace %q: %w", *in.Name, keel.KindAlreadyExists)
			}
			if err := tx.Delete(wsNames(w.Org) + fold(w.Name)); err != nil {
				return err
			}
			if err := tx.Put(key, []byte(id)); err != nil {
				return err
			}
			w.Name = *in.Name
		}
		if in.ProjectID != nil && *in.ProjectID != "" && *in.ProjectID != w.ProjectID {
			if err := c.moveOne(ctx, tx, w, *in.ProjectID); err != nil {
				return err
			}
		}
		w.Settings.merge(in.WorkspaceSettings)
		w.UpdatedAt = &now
		if err := putJSON(tx, wsKey(id), w); err != nil {
			return err
		}
		out, err = c.publicWorkspace(ctx, w, o)
		return err
	})
	return out, err
}

// moveOne moves the workspace w into the project dest in tx, with the
// rights of MoveWorkspaces; w.ProjectID is set, the caller writes w.
func (c *Catalog) moveOne(ctx context.Context, tx storage.Tx, w *wsRecord, dest string) error {
	p, err := getProject(tx, dest)
	if err == nil && p.Org != w.Org {
		err = keel.KindNotFound
	}
	if err == nil {
		err = hide(keel.Authorize(ctx, c.authz, keel.CapRead, projectResource(p.Org, p.ID)), "project", dest)
	}
	if errors.Is(err, keel.KindNotFound) {
		return keel.Invalid("ProjectID", "no project %q in organization %q", dest, w.Org)
	}
	if err != nil {
		return err
	}
	for _, pid := range []string{dest, w.ProjectID} {
		if err := keel.Authorize(ctx, c.authz, keel.CapMoveWorkspaces, projectResource(w.Org, pid)); err != nil {
			return err
		}
	}
	src, err := getProject(tx, w.ProjectID)
	if err != nil {
		return fmt.Errorf("project of workspace %q: %v: %w", w.ID, err, keel.KindInternal)
	}
	src.WorkspaceCount--
	p.WorkspaceCount++
	for _, q := range []*prjRecord{src, p} {
		if err := putJSON(tx, prjKey(q.ID), q); err != nil {
			return err
		}
	}
	if err := tx.Delete(prjWorkspaces(w.Org, w.ProjectID) + w.ID); err != nil {
		return err
	}
	w.ProjectID = dest
	return tx.Put(prjWorkspaces(w.Org, dest)+w.ID, nil)
}

// GetWorkspace returns the workspace id. It needs read on
// "organizations/<org>/workspaces/<id>"; without it the workspace is not
// found.
func (c *Catalog) GetWorkspace(ctx context.Context, id string) (_ Workspace, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.GetWorkspace", id, nil, func(ctx context.Context) (Workspace, error) {
		return c.doGetWorkspace(ctx, id)
	})
}

func (c *Catalog) doGetWorkspace(ctx context.Context, id string) (_ Workspace, err error) {
	defer prefixErr(&err)
	var out Workspace
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, o, err := c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		if err != nil {
			return err
		}
		out, err = c.publicWorkspace(ctx, rec, o)
		return err
	})
	return out, err
}

// GetWorkspaceByName returns the workspace of org named name, ignoring
// case, with the rights of GetWorkspace: one the caller may not read answers as a
// missing one, with the same message, which names neither its id nor
// anything else of it.
func (c *Catalog) GetWorkspaceByName(ctx context.Context, org, name string) (_ Workspace, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.GetWorkspaceByName", org, name, func(ctx context.Context) (Workspace, error) {
		return c.getWorkspaceByName(ctx, org, name)
	})
}

func (c *Catalog) getWorkspaceByName(ctx context.Context, org, name string) (_ Workspace, err error) {
	defer prefixErr(&err)
	var out Workspace
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		id, err := c.workspaceID(tx, org, name)
		if err != nil {
			return err
		}
		rec, o, err := c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		if errors.Is(err, keel.KindNotFound) {
			return noWorkspaceNamed(org, name)
		}
		if err != nil {
			return err
		}
		out, err = c.publicWorkspace(ctx, rec, o)
		return err
	})
	return out, err
}

func (c *Catalog) workspaceID(tx storage.Tx, org, name string) (string, error) {
	if !validID(org) || !validID(name) {
		return "", noWorkspaceNamed(org, name)
	}
	id, err := lookup(tx, wsNames(org)+fold(name))
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", noWorkspaceNamed(org, name)
	}
	return id, nil
}

// noWorkspaceNamed is the answer for a workspace of org named name that
// does not exist or that the caller may not read.
func noWorkspaceNamed(org, name string) error {
	return fmt.Errorf("no workspace %q in organization %q: %w", name, org, keel.KindNotFound)
}

// visibleWorkspace returns the workspace id and its organization, or
// keel.KindNotFound when it does not exist, its organization is being
// deleted, or the caller lacks capability on it.
func (c *Catalog) visibleWorkspace(ctx context.Context, tx storage.Tx, id string, capability keel.Capability) (*wsRecord, *orgRecord, error) {
	rec, err := getWorkspace(tx, id)
	if err != nil {
		return nil, nil, err
	}
	o, err := liveOrgRecord(tx, rec.Org, "workspace", id)
	if err != nil {
		return nil, nil, err
	}
	if err := keel.Authorize(ctx, c.authz, capability, workspaceResource(rec.Org, id)); err != nil {
		return nil, nil, hide(err, "workspace", id)
	}
	return rec, o, nil
}

// ListWorkspacesRequest asks for one page of the workspaces of an
// organization.
type ListWorkspacesRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: DefaultPageSize; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the filtered list (0, the default: its first workspace): a
	// transport renders numbered pages with it. It is at least 0.
	Offset int
	// Search keeps the workspaces whose name holds it, ignoring case.
	Search string
	// WildcardName keeps the workspaces whose name matches it, ignoring
	// case: each "*" stands for any characters ("*-prod" the names that
	// end in "-prod", "prod-*" those that start with "prod-", "*-prod-*"
	// those that hold "-prod-"); a pattern without "*" is a whole name.
	// With Search, the workspaces that match both.
	WildcardName string
	// ProjectID keeps the workspaces of that project ("": all projects).
	ProjectID string
}

// wildcardMatch reports whether name, folded, matches pattern, folded: each
// "*" of pattern stands for any characters, the rest must appear as they
// are, in order, the first part at the start of name and the last at its
// end.
func wildcardMatch(pattern, name string) bool {
	parts := strings.Split(fold(pattern), "*")
	name = fold(name)
	if len(parts) == 1 {
		return name == parts[0]
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(name, first) || !strings.HasSuffix(name[len(first):], last) {
		return false
	}
	rest := name[len(first) : len(name)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return true
}

// ListWorkspaces returns one page of the workspaces of org the caller may
// read, in name order (case folded), with Total, the workspaces of the
// organization the caller may read, and Matching, those the filters keep.
// It needs read on the organization; an organization the caller cannot
// read is not found. A page past the end is empty.
func (c *Catalog) ListWorkspaces(ctx context.Context, org string, r ListWorkspacesRequest) (_ keel.CountedPage[Workspace], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.ListWorkspaces", org, r, func(ctx context.Context) (keel.CountedPage[Workspace], error) {
		return c.listWorkspaces(ctx, org, r)
	})
}

func (c *Catalog) listWorkspaces(ctx context.Context, org string, r ListWorkspacesRequest) (_ keel.CountedPage[Workspace], err error) {
	defer prefixErr(&err)
	q := fold(r.Search)
	var out keel.CountedPage[Workspace]
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.CountedPage[Workspace]{Page: keel.Page[Workspace]{Items: []Workspace{}}}
		o, err := c.visibleOrg(ctx, tx, org, keel.CapRead)
		if err != nil {
			return err
		}
		pg, err := pager.New(r.ListRequest, r.Offset, false, DefaultPageSize, MaxPageSize)
		if err != nil {
			return err
		}
		prefix := wsNames(org)
		err = tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			id := string(v)
			if ok, err := c.may(ctx, keel.CapRead, workspaceResource(org, id)); err != nil || !ok {
				return err
			}
			out.Total++
			name := key[len(prefix):]
			if !strings.Contains(name, q) || r.WildcardName != "" && !wildcardMatch(r.WildcardName, name) {
				return nil
			}
			w, err := getWorkspace(tx, id)
			if err != nil {
				return fmt.Errorf("workspace index of %q: %v: %w", org, err, keel.KindInternal)
			}
			if r.ProjectID != "" && w.ProjectID != r.ProjectID || !pg.Take(name) {
				return nil
			}
			pw, err := c.publicWorkspace(ctx, w, o)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, pw)
			return nil
		})
		out.Matching, out.Next = pg.Seen, pg.Next()
		return err
	})
	return out, err
}

// DeleteWorkspace deletes a workspace. It needs delete on
// "organizations/<org>/workspaces/<id>"; without read on it the workspace
// is not found. keel keeps no state or runs, so that HCP Terraform's safe
// delete (refused while the workspace manages resources) and force delete
// are both this. The services registered with the Catalog forget the
// workspace in the same transaction (Registration.OnForget).
func (c *Catalog) DeleteWorkspace(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.DeleteWorkspace", id, nil, func(ctx context.Context) error {
		return c.deleteWorkspace(ctx, id)
	})
}

func (c *Catalog) deleteWorkspace(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return c.update(ctx, func(ctx context.Context, tx storage.Tx, forget forgetFunc) error {
		w, _, err := c.visibleWorkspace(ctx, tx, id, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapDelete, workspaceResource(w.Org, id)); err != nil {
			return err
		}
		p, err := getProject(tx, w.ProjectID)
		if err != nil {
			return fmt.Errorf("project of workspace %q: %v: %w", id, err, keel.KindInternal)
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
		return forget(Forgotten{Kind: ForgetWorkspace, Org: w.Org, ID: id})
	})
}
