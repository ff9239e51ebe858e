package project

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Limits of the project rules.
const (
	minNameLen        = 3   // characters in a project name, at least
	maxNameLen        = 36  // characters in a project name, at most
	maxDescriptionLen = 256 // characters in a description, at most
	// DefaultPageSize is the Limit of a page of any list when the
	// request gives none (0 or less).
	DefaultPageSize = 20
	// MaxPageSize is the largest Limit of a page of any list: a larger
	// one is cut to it, as HCP Terraform cuts its page sizes.
	MaxPageSize = 100
)

// Permissions are the caller's rights on a project, as the project
// document's "permissions" attribute shows them.
type Permissions struct {
	CanUpdate          bool // update on the project
	CanDestroy         bool // force-delete on the project
	CanCreateWorkspace bool // create on the project's workspaces
}

// Project is a project as read, with the counts and the caller's
// permissions at the time of the read.
type Project struct {
	ID   string
	Org  string
	Name string
	// Description is nil when it was never set.
	Description    *string
	WorkspaceCount int
	TeamCount      int
	Permissions    Permissions
}

// ProjectRequest is the input of Create and Update: a nil field is not
// given (Update leaves it as it is).
type ProjectRequest struct {
	// Name is required by Create: 3 to 36 letters,
	// digits, spaces, "-" and "_", unique in the organization ignoring
	// case.
	Name *string
	// Description is at most 256 characters.
	Description *string
}

// validateInput checks the fields sent; create requires the name.
func validateInput(in ProjectRequest, create bool) error {
	var v keel.Validation
	switch {
	case in.Name == nil && create:
		v.Add("Name", "is required")
	case in.Name != nil:
		if msg := nameProblem(*in.Name); msg != "" {
			v.Add("Name", "%s", msg)
		}
	}
	if in.Description != nil && utf8.RuneCountInString(*in.Description) > maxDescriptionLen {
		v.Add("Description", "must be at most %d characters", maxDescriptionLen)
	}
	return v.Err()
}

// nameProblem returns what is wrong with a project name, or "".
func nameProblem(name string) string {
	n := utf8.RuneCountInString(name)
	if n < minNameLen || n > maxNameLen {
		return fmt.Sprintf("must be %d to %d characters", minNameLen, maxNameLen)
	}
	for _, r := range name {
		if !isWordRune(r) && r != ' ' {
			return "may contain only letters, numbers, spaces, - and _"
		}
	}
	if strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") {
		return "must not start or end with a space"
	}
	return ""
}

// permissions computes the caller's Permissions on a project. A refusal is
// false; any other error of the Authorizer is returned.
func (c *Catalog) permissions(ctx context.Context, org, id string) (Permissions, error) {
	var p Permissions
	checks := []struct {
		capability keel.Capability
		resource   string
		out        *bool
	}{
		{keel.CapUpdate, projectResource(org, id), &p.CanUpdate},
		{keel.CapForceDelete, projectResource(org, id), &p.CanDestroy},
		{keel.CapCreate, wsCreateResource(org, id), &p.CanCreateWorkspace},
	}
	for _, ch := range checks {
		err := keel.Authorize(ctx, c.authz, ch.capability, ch.resource)
		switch {
		case err == nil:
			*ch.out = true
		case !errors.Is(err, keel.KindForbidden):
			return p, err
		}
	}
	return p, nil
}

func (c *Catalog) public(ctx context.Context, r *prjRecord) (Project, error) {
	perms, err := c.permissions(ctx, r.Org, r.ID)
	if err != nil {
		return Project{}, err
	}
	return Project{
		ID: r.ID, Org: r.Org, Name: r.Name, Description: r.Description,
		WorkspaceCount: r.WorkspaceCount, TeamCount: r.TeamCount, Permissions: perms,
	}, nil
}

// visibleProject returns the project, or keel.KindNotFound when it does
// not exist or the caller lacks read on it.
func (c *Catalog) visibleProject(ctx context.Context, tx storage.Tx, id string) (*prjRecord, error) {
	rec, err := getProject(tx, id)
	if err != nil {
		return nil, err
	}
	if err := liveOrg(tx, rec.Org, "project", id); err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, c.authz, keel.CapRead, projectResource(rec.Org, id)); err != nil {
		return nil, hide(err, "project", id)
	}
	return rec, nil
}

// Create creates a project in org. It needs manage-projects on
// "organizations/<org>/projects" (keel.KindForbidden without it); an
// organization the caller cannot read is not found. Names are unique in the
// organization ignoring case (keel.KindAlreadyExists).
func (c *Catalog) Create(ctx context.Context, org string, in ProjectRequest) (_ Project, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.Create", org, in, func(ctx context.Context) (Project, error) {
		return c.doCreate(ctx, org, in)
	})
}

func (c *Catalog) doCreate(ctx context.Context, org string, in ProjectRequest) (_ Project, err error) {
	defer prefixErr(&err)
	if err := validateInput(in, true); err != nil {
		return Project{}, err
	}
	rec := prjRecord{ID: newID("prj"), Org: org, Name: *in.Name, Description: in.Description, CreatedAt: c.clock.Now().UTC()}
	var out Project
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		o, err := c.visibleOrg(ctx, tx, org, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapManageProjects, projectsResource(org)); err != nil {
			return err
		}
		if err := claimName(tx, org, rec.Name, rec.ID); err != nil {
			return err
		}
		o.ProjectCount++
		if err := putJSON(tx, orgKey(org), o); err != nil {
			return err
		}
		if err := putJSON(tx, prjKey(rec.ID), rec); err != nil {
			return err
		}
		out, err = c.public(ctx, &rec)
		return err
	})
	return out, err
}

// claimName writes the name index entry of a project, or fails with
// keel.KindAlreadyExists when another project has the name.
func claimName(tx storage.Tx, org, name, id string) error {
	key := prjNames(org) + fold(name)
	old, err := lookup(tx, key)
	if err != nil {
		return err
	}
	if old != "" && old != id {
		return fmt.Errorf("project name %q is taken in organization %q: %w", name, org, keel.KindAlreadyExists)
	}
	return tx.Put(key, []byte(id))
}

// Update changes the fields sent. It needs update on the project
// (keel.KindForbidden without it); a project the caller cannot read is not
// found.
func (c *Catalog) Update(ctx context.Context, id string, in ProjectRequest) (_ Project, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.Update", id, in, func(ctx context.Context) (Project, error) {
		return c.doUpdate(ctx, id, in)
	})
}

func (c *Catalog) doUpdate(ctx context.Context, id string, in ProjectRequest) (_ Project, err error) {
	defer prefixErr(&err)
	if err := validateInput(in, false); err != nil {
		return Project{}, err
	}
	var out Project
	err = c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleProject(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapUpdate, projectResource(rec.Org, id)); err != nil {
			return err
		}
		if in.Name != nil && *in.Name != rec.Name {
			if fold(*in.Name) != fold(rec.Name) {
				if err := tx.Delete(prjNames(rec.Org) + fold(rec.Name)); err != nil {
					return err
				}
			}
			if err := claimName(tx, rec.Org, *in.Name, rec.ID); err != nil {
				return err
			}
			rec.Name = *in.Name
		}
		if in.Description != nil {
			rec.Description = in.Description
		}
		if err := putJSON(tx, prjKey(id), rec); err != nil {
			return err
		}
		out, err = c.public(ctx, rec)
		return err
	})
	return out, err
}

// Get returns the project id. It needs read on
// "organizations/<org>/projects/<id>"; without it the project is not
// found.
func (c *Catalog) Get(ctx context.Context, id string) (_ Project, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.Get", id, nil, func(ctx context.Context) (Project, error) {
		return c.doGet(ctx, id)
	})
}

func (c *Catalog) doGet(ctx context.Context, id string) (_ Project, err error) {
	defer prefixErr(&err)
	var out Project
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleProject(ctx, tx, id)
		if err != nil {
			return err
		}
		out, err = c.public(ctx, rec)
		return err
	})
	return out, err
}

// Delete deletes an empty project. A project the caller cannot read is
// keel.KindNotFound; without force-delete on it, keel.KindForbidden; with
// workspaces inside, keel.KindConflict; the organization's default project,
// keel.KindConflict too. The services registered with the Catalog forget
// the project in the same transaction (Registration.OnForget). The
// teams' access to it, any number, is deleted after that transaction, in
// as many as the store needs (an interrupted run is finished by
// FinishDeletions).
func (c *Catalog) Delete(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.Delete", id, nil, func(ctx context.Context) error {
		return c.doDelete(ctx, id)
	})
}

func (c *Catalog) doDelete(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	var org string
	err = c.update(ctx, func(ctx context.Context, tx storage.Tx, forget forgetFunc) error {
		rec, err := c.visibleProject(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapForceDelete, projectResource(rec.Org, id)); err != nil {
			return err
		}
		if rec.WorkspaceCount > 0 {
			return fmt.Errorf("project %q contains %d workspaces: %w", id, rec.WorkspaceCount, keel.KindConflict)
		}
		o, err := getOrg(tx, rec.Org)
		if err != nil {
			return err
		}
		if o.DefaultProject == id {
			return fmt.Errorf("project %q is the default project of %q: %w", id, rec.Org, keel.KindConflict)
		}
		o.ProjectCount--
		if err := putJSON(tx, orgKey(rec.Org), o); err != nil {
			return err
		}
		if err := tx.Delete(prjNames(rec.Org) + fold(rec.Name)); err != nil {
			return err
		}
		if err := tx.Delete(prjKey(id)); err != nil {
			return err
		}
		if err := tx.Put(cleanupKey(cleanupProject, id), []byte(rec.Org)); err != nil {
			return err
		}
		org = rec.Org
		return forget(Forgotten{Kind: ForgetProject, Org: rec.Org, ID: id})
	})
	if err != nil {
		return err
	}
	return c.finishCleanup(ctx, cleanupProject, org, id)
}

// MoveWorkspaces moves workspaces into the project destID, all or none, in
// one transaction. A destination that does not exist, or on which the
// caller lacks read or move-workspaces, is keel.KindNotFound. Any
// workspace that does not exist, is of another organization, that the
// caller may not read, or whose project the caller lacks move-workspaces
// on, makes the whole move fail with keel.KindForbidden (the same answer
// for each, so that it does not tell whether a workspace exists); the
// error lists their ids (sorted) after "workspaces: ". Ids are de-duplicated; workspaces already in the
// destination stay.
//
// The one transaction writes three keys per workspace moved and one per
// project whose count changes, and reads each workspace and project: on a
// store that bounds transactions a larger move is keel.KindTooLarge,
// refused before anything is written, with the counts and the limit in
// the message (move fewer at once). On etcd's default limits (128
// writes) that is more than 42 workspaces from one project.
func (c *Catalog) MoveWorkspaces(ctx context.Context, destID string, workspaceIDs []string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.MoveWorkspaces", "", map[string]any{"destID": destID, "workspaceIDs": workspaceIDs}, func(ctx context.Context) error {
		return c.moveWorkspaces(ctx, destID, workspaceIDs)
	})
}

func (c *Catalog) moveWorkspaces(ctx context.Context, destID string, workspaceIDs []string) (err error) {
	defer prefixErr(&err)
	ids := slices.Clone(workspaceIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		dest, err := c.visibleProject(ctx, tx, destID)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapMoveWorkspaces, projectResource(dest.Org, destID)); err != nil {
			return hide(err, "project", destID)
		}
		var bad []string
		var moving []*wsRecord
		allowed := map[string]bool{} // source project id -> caller may move out of it
		for _, id := range ids {
			w, err := getWorkspace(tx, id)
			if errors.Is(err, keel.KindNotFound) || (err == nil && w.Org != dest.Org) {
				bad = append(bad, id)
				continue
			}
			if err != nil {
				return err
			}
			// A workspace the caller may not read is refused as a
			// missing one, so that the answer tells nothing of it.
			if ok, err := c.may(ctx, keel.CapRead, workspaceResource(w.Org, w.ID)); err != nil {
				return err
			} else if !ok {
				bad = append(bad, id)
				continue
			}
			ok, seen := allowed[w.ProjectID]
			if !seen {
				err := keel.Authorize(ctx, c.authz, keel.CapMoveWorkspaces, projectResource(w.Org, w.ProjectID))
				if err != nil && !errors.Is(err, keel.KindForbidden) {
					return err
				}
				ok = err == nil
				allowed[w.ProjectID] = ok
			}
			if !ok {
				bad = append(bad, id)
				continue
			}
			if w.ProjectID != destID {
				moving = append(moving, w)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("cannot move workspaces: %s: %w", strings.Join(bad, ", "), keel.KindForbidden)
		}
		counts := map[string]int{}
		for _, w := range moving {
			counts[w.ProjectID]--
			counts[destID]++
		}
		if err := moveFits(c.store.Limits(), len(ids), len(moving), len(counts)); err != nil {
			return err
		}
		for _, w := range moving {
			if err := tx.Delete(prjWorkspaces(w.Org, w.ProjectID) + w.ID); err != nil {
				return err
			}
			if err := tx.Put(prjWorkspaces(w.Org, destID)+w.ID, nil); err != nil {
				return err
			}
			w.ProjectID = destID
			if err := putJSON(tx, wsKey(w.ID), w); err != nil {
				return err
			}
		}
		for pid, delta := range counts {
			p := dest // read already
			if pid != destID {
				if p, err = getProject(tx, pid); err != nil {
					return fmt.Errorf("project %q of a moved workspace: %v: %w", pid, err, keel.KindInternal)
				}
			}
			p.WorkspaceCount += delta
			if err := putJSON(tx, prjKey(pid), p); err != nil {
				return err
			}
		}
		return nil
	})
}

// moveFits returns nil when a MoveWorkspaces of n workspace ids, moving
// moving of them and changing the counts of projects projects, fits one
// transaction of a store of limits l, and else an error of kind
// keel.KindTooLarge naming the limit. It writes, per workspace moved, its
// record and its two index keys, and each project's record; it reads, at
// most, the destination and its organization (four keys counted), each
// workspace and each project.
func moveFits(l storage.Limits, n, moving, projects int) error {
	writes, reads := 3*moving+projects, 4+n+projects
	switch {
	case l.MaxTxOps > 0 && writes > l.MaxTxOps:
		return fmt.Errorf("moving %d workspaces out of %d projects writes three keys per workspace and one per project: %d writes, at most %d fit in one transaction of this store (storage.Limits MaxTxOps); move fewer at once: %w",
			moving, projects-1, writes, l.MaxTxOps, keel.KindTooLarge)
	case l.MaxTxReads > 0 && reads > l.MaxTxReads:
		return fmt.Errorf("moving %d workspaces reads each workspace and project: %d reads, at most %d fit in one transaction of this store (storage.Limits MaxTxReads); move fewer at once: %w",
			n, reads, l.MaxTxReads, keel.KindTooLarge)
	}
	return nil
}
