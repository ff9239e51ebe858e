package project

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// defaultProjectName is the name of the project created with every
// organization, as HCP Terraform does.
const defaultProjectName = "Default Project"

// Options configure a Catalog. The zero value (or nil) allows everything
// and uses the system clock.
type Options struct {
	// Authorizer decides the caller's rights on each operation. Nil
	// allows everything.
	Authorizer keel.Authorizer
	// Clock gives creation times. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Observer is told of every operation (see keel.Observer). Nil:
	// none.
	Observer keel.Observer
}

// Catalog keeps organizations, their projects, teams and workspaces in a
// storage.Store. Create one with New; it is safe for concurrent use.
type Catalog struct {
	store storage.Store
	authz keel.Authorizer
	clock keel.Clock
	obs   keel.Observer

	mu       sync.Mutex
	services map[string]*Registration // by the prefix of their view
}

// New returns a Catalog that keeps its keys in store, as given: a store
// or a view its caller has scoped. Programs give it storage.Sub(root,
// "project/"), and the services that keep data per organization (policy)
// views of the same root beside it (see Register). New reads nothing from
// the store.
//
// New fails with an error of kind keel.KindInvalid, naming Store, when
// store is nil or is a part of a store that a composition root gave to
// another kind of component (storage.CheckClaim).
func New(store storage.Store, opts *Options) (_ *Catalog, err error) {
	defer prefixErr(&err)
	var o Options
	if opts != nil {
		o = *opts
	}
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	} else if err := storage.CheckClaim(store, ClaimKind); err != nil {
		v.Add("Store", "%s", keel.FieldErrors(err)[0].Rule)
	}
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("project: %w", err)
	}
	return &Catalog{
		store:    store,
		authz:    o.Authorizer,
		clock:    keel.ClockOrSystem(o.Clock),
		obs:      o.Observer,
		services: map[string]*Registration{},
	}, nil
}

// ClaimKind is the kind of component a composition root claims the
// catalog's part of the store for (storage.Claim).
const ClaimKind = "project"

// Organization is an organization as read.
type Organization struct {
	// Name identifies the organization; it is its id.
	Name string
	// Email is the organization's contact address, as given.
	Email string
	// CreatedAt is the creation time, in UTC.
	CreatedAt time.Time
	// DefaultProjectID is the project created with the organization.
	DefaultProjectID string
	// Settings has every field set: the value stored, or HCP
	// Terraform's default.
	Settings OrganizationSettings
	// Permissions are the caller's rights at the time of the read.
	Permissions OrganizationPermissions
}

func (r *orgRecord) public() Organization {
	return Organization{Name: r.Name, Email: r.Email, CreatedAt: r.CreatedAt, DefaultProjectID: r.DefaultProject, Settings: r.Settings.resolved()}
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

// CreateOrganization creates the organization r.Name, with its default
// project, its owners team (OwnersTeamName, every organization permission
// set), r.Email and the settings given (nil fields: HCP Terraform's
// defaults; see OrganizationSettings). It needs create on "organizations". The name
// ("Name") is required, letters, digits, "-" and "_"; a taken name
// (ignoring case is not applied: organization names are case-sensitive
// ids) is keel.KindAlreadyExists; the settings follow the rules of
// UpdateOrganization, on their Go names ("CollaboratorAuthPolicy").
//
// When a deletion of an organization of that name was stopped midway (an
// error, a crash), CreateOrganization first finishes it, so that nothing
// of the old organization is seen in the new one; it fails with the
// error of that deletion when it cannot finish it.
func (c *Catalog) CreateOrganization(ctx context.Context, r OrganizationRequest) (_ Organization, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.CreateOrganization", "", r, func(ctx context.Context) (Organization, error) {
		return c.createOrganization(ctx, r)
	})
}

func (c *Catalog) createOrganization(ctx context.Context, r OrganizationRequest) (_ Organization, err error) {
	defer prefixErr(&err)
	name, email := valueOf(r.Name), valueOf(r.Email)
	if err := keel.Authorize(ctx, c.authz, keel.CapCreate, orgsResource()); err != nil {
		return Organization{}, err
	}
	var v keel.Validation
	if err := slugError(name, 0); err != nil {
		v.Add("Name", "%s", keel.FieldErrors(err)[0].Rule)
	}
	s := r.OrganizationSettings
	s.validate(&v)
	if err := v.Err(); err != nil {
		return Organization{}, err
	}
	now := c.clock.Now().UTC()
	prjID := newID("prj")
	owners := ownersTeam(newID("team"), name)
	rec := orgRecord{Name: name, Email: email, CreatedAt: now, DefaultProject: prjID, ProjectCount: 1, Settings: s}
	var pending *deletion
	create := func(ctx context.Context, tx storage.Tx) error {
		var err error
		if pending, err = getDeletion(tx, name); err != nil || pending != nil {
			return err
		}
		if _, err := getOrg(tx, name); err == nil {
			return fmt.Errorf("organization %q: %w", name, keel.KindAlreadyExists)
		} else if !errors.Is(err, keel.KindNotFound) {
			return err
		}
		if err := putJSON(tx, orgKey(name), rec); err != nil {
			return err
		}
		p := prjRecord{ID: prjID, Org: name, Name: defaultProjectName, CreatedAt: now}
		if err := putJSON(tx, prjKey(prjID), p); err != nil {
			return err
		}
		if err := putJSON(tx, teamKey(owners.ID), owners); err != nil {
			return err
		}
		if err := tx.Put(teamNames(name)+fold(owners.Name), []byte(owners.ID)); err != nil {
			return err
		}
		return tx.Put(prjNames(name)+fold(p.Name), []byte(prjID))
	}
	err = c.store.Update(ctx, create)
	if err == nil && pending != nil {
		// The name is still being deleted: finish that deletion, then
		// create. Another deletion cannot start meanwhile, as the name
		// has no organization.
		if err := c.finish(ctx, name, *pending); err != nil {
			return Organization{}, err
		}
		err = c.store.Update(ctx, create)
		if err == nil && pending != nil {
			err = fmt.Errorf("organization %q is being deleted: %w", name, keel.KindConflict)
		}
	}
	if err != nil {
		return Organization{}, err
	}
	return c.publicOrg(ctx, &rec)
}

// GetOrganization returns the organization name, with the caller's
// permissions. It needs read on "organizations/<name>"; without it the
// organization is not found.
func (c *Catalog) GetOrganization(ctx context.Context, name string) (_ Organization, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.GetOrganization", name, nil, func(ctx context.Context) (Organization, error) {
		return c.getOrganization(ctx, name)
	})
}

func (c *Catalog) getOrganization(ctx context.Context, name string) (_ Organization, err error) {
	defer prefixErr(&err)
	var out Organization
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := c.visibleOrg(ctx, tx, name, keel.CapRead)
		if err != nil {
			return err
		}
		out, err = c.publicOrg(ctx, rec)
		return err
	})
	return out, err
}

// visibleOrg returns the organization, or keel.KindNotFound when it does
// not exist or the caller lacks capability on it.
func (c *Catalog) visibleOrg(ctx context.Context, tx storage.Tx, name string, capability keel.Capability) (*orgRecord, error) {
	rec, err := getOrg(tx, name)
	if err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, c.authz, capability, orgResource(name)); err != nil {
		return nil, hide(err, "organization", name)
	}
	return rec, nil
}

// hide turns a refusal into keel.KindNotFound naming the object of kind
// ("project") and id, with the message of a missing record (getJSON's), so
// that existence does not leak; other errors pass unchanged.
func hide(err error, kind, id string) error {
	if errors.Is(err, keel.KindForbidden) {
		return fmt.Errorf("no %s %q: %w", kind, id, keel.KindNotFound)
	}
	return err
}

// ListOrganizations returns one page of the organizations the caller may
// read (read on "organizations/<name>"), in name order (the cursor of an
// organization is its name), as HCP Terraform lists those the caller
// belongs to: an organization the caller cannot read is not listed, so
// that the list reveals nothing the caller cannot read. A page holds at
// most r.Limit organizations (DefaultPageSize when 0 or less, at most
// MaxPageSize).
func (c *Catalog) ListOrganizations(ctx context.Context, r keel.ListRequest) (_ keel.Page[Organization], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.ListOrganizations", "", r, func(ctx context.Context) (keel.Page[Organization], error) {
		return c.listOrganizations(ctx, r)
	})
}

func (c *Catalog) listOrganizations(ctx context.Context, r keel.ListRequest) (_ keel.Page[Organization], err error) {
	defer prefixErr(&err)
	var out keel.Page[Organization]
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.Page[Organization]{Items: []Organization{}}
		pg, err := pager.New(r, 0, false, DefaultPageSize, MaxPageSize)
		if err != nil {
			return err
		}
		opts := storage.ScanOptions{}
		if r.Cursor != "" {
			opts.After = orgPrefix + r.Cursor
		}
		err = tx.Scan(orgPrefix, opts, func(key string, _ []byte) error {
			rec, err := getOrg(tx, key[len(orgPrefix):])
			if err != nil {
				return err
			}
			if ok, err := c.may(ctx, keel.CapRead, orgResource(rec.Name)); err != nil || !ok {
				return err
			}
			if !pg.Take(rec.Name) {
				return storage.StopScan
			}
			o, err := c.publicOrg(ctx, rec)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, o)
			return nil
		})
		if err != nil && err != storage.StopScan {
			return err
		}
		out.Next = pg.Next()
		return nil
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
func (c *Catalog) DeleteOrganization(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.DeleteOrganization", name, nil, func(ctx context.Context) error {
		return c.deleteOrganization(ctx, name)
	})
}

func (c *Catalog) deleteOrganization(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	d, err := c.startDeletion(ctx, name)
	if err != nil {
		return err
	}
	return c.finish(ctx, name, d)
}
