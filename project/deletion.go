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
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/storage"
)

// The deletion of an organization (see the package documentation,
// "Deleting an organization"):
//
//  1. one transaction checks the caller's right, deletes org/<name> and
//     writes the pending deletion del/<name>: from then on the
//     organization and everything of it read as not found, and no write
//     can add to it;
//  2. every registered service deletes its keys of the organization, then
//     the Catalog its own, each in as many transactions as the store's
//     limits require (storage.Batch), each transaction checking that the
//     pending deletion is still the same;
//  3. one transaction deletes del/<name>.
//
// A deletion stopped between 1 and 3 (an error, a crash) is finished by
// DeleteOrganization or CreateOrganization of the same name, or by
// FinishDeletions.

// deletion is the pending deletion of an organization, at del/<name>.
type deletion struct {
	// ID tells this deletion from a later one of the same name: a
	// finisher whose deletion is over stops instead of deleting the keys
	// of an organization created again since.
	ID string `json:"id"`
	// Services are the prefixes (in the store under the Catalog) of the
	// services registered when the deletion started: each must be
	// registered to finish it, so that no service's data outlives the
	// organization because a program did not build that service.
	Services []string `json:"services,omitempty"`
}

const delPrefix = "del/"

func delKey(name string) string { return delPrefix + name }

// getDeletion returns the pending deletion of the organization name, or
// nil when there is none.
func getDeletion(tx storage.Tx, name string) (*deletion, error) {
	if !validID(name) {
		return nil, nil
	}
	raw, err := tx.Get(delKey(name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d deletion
	if err := json.Unmarshal(raw, &d); err != nil || d.ID == "" {
		return nil, fmt.Errorf("pending deletion of organization %q is corrupt (%v): %w", name, err, keel.KindInternal)
	}
	return &d, nil
}

// errDeletionOver ends the work of a finisher whose deletion was finished
// by another one (and the name perhaps taken again): it has nothing left
// to do.
var errDeletionOver = errors.New("project: the deletion was finished by another caller")

// PurgeFunc deletes every key a registered service keeps for the
// organization org. It works through store, a view of the service's own
// store (the one given to Register) in which each Update first checks that
// the deletion it serves is still pending; it must use that store and no
// other, and return the errors of store wrapped with %w.
//
// A PurgeFunc runs after the organization reads as not found, and again,
// from the start, when a deletion stopped midway (an error, a crash) is
// finished later: it must be resumable. storage.Batch and
// storage.DeletePrefix, which size their transactions from
// store.Limits(), are: they visit what is still there.
type PurgeFunc func(ctx context.Context, org string, store storage.Store) error

// Registration is the handle of a service that keeps data per
// organization in a view of the Catalog's store (package policy): Register
// hands it out. Its transactions see the service's view and the
// Catalog's organizations in one transaction. A Registration is safe for
// concurrent use.
type Registration struct {
	c      *Catalog
	joint  *storage.Joint // the service's view with the Catalog's
	base   storage.Store  // the store under both views
	prefix string         // the service's view in base
	purge  PurgeFunc
	forget ForgetFunc // guarded by c.mu
}

// Orgs reads the organizations of a Catalog inside a transaction of a
// Registration. It is valid only while that transaction runs.
type Orgs struct {
	tx storage.Tx // the Catalog's view of the transaction
}

// Exists reports whether the organization name exists in the
// transaction's snapshot, without asking the Authorizer. An organization
// whose deletion has started does not exist.
func (o Orgs) Exists(name string) (_ bool, err error) {
	defer prefixErr(&err)
	_, err = getOrg(o.tx, name)
	if errors.Is(err, keel.KindNotFound) {
		return false, nil
	}
	return err == nil, err
}

// WorkspaceOrg returns the organization of the workspace id in the
// transaction's snapshot, without asking the Authorizer, so that a
// service can check that an object it points at (a policy set's
// workspace) is of the organization it expects. A workspace that does
// not exist is an error of kind keel.KindNotFound. It reads one key.
func (o Orgs) WorkspaceOrg(id string) (_ string, err error) {
	defer prefixErr(&err)
	w, err := getWorkspace(o.tx, id)
	if err != nil {
		return "", err
	}
	return w.Org, nil
}

// WorkspaceResource is the resource on which a Catalog asks read for the
// workspace id of org ("organizations/<org>/workspaces/<id>"): a service
// that names a workspace (a policy set's member) asks read on it, so that
// one the caller may not read answers as a missing one.
func WorkspaceResource(org, id string) string { return workspaceResource(org, id) }

// ProjectResource is the resource on which a Catalog asks read for the
// project id of org ("organizations/<org>/projects/<id>"), as
// WorkspaceResource is for a workspace.
func ProjectResource(org, id string) string { return projectResource(org, id) }

// ProjectOrg returns the organization of the project id in the
// transaction's snapshot, as WorkspaceOrg does for a workspace.
func (o Orgs) ProjectOrg(id string) (_ string, err error) {
	defer prefixErr(&err)
	p, err := getProject(o.tx, id)
	if err != nil {
		return "", err
	}
	return p.Org, nil
}

// Register joins a service that keeps data per organization to the
// Catalog: from then on, deleting an organization calls purge to delete
// the service's data of it (see PurgeFunc), and the service reads, through
// the returned Registration, whether an organization exists in its own
// transactions, so that it never writes data for an organization being
// deleted. A service registers once, when it is built (policy.New does).
//
// store is the service's store: a view (storage.Sub) of the store under
// the Catalog's view, that overlaps neither the Catalog's view nor the
// view of another registered service. Registering the same view again
// replaces the earlier registration.
//
// Register fails with an error of kind keel.KindInvalid, and registers
// nothing, when store or purge is nil, or store cannot be joined to the
// Catalog's store (storage.Join: another store, a sealed view of an
// unsealed store, an overlapping view), or overlaps a registered view.
func (c *Catalog) Register(store storage.Store, purge PurgeFunc) (_ *Registration, err error) {
	defer prefixErr(&err)
	if store == nil {
		return nil, fmt.Errorf("project: register: %w", keel.Invalid("Store", "is required"))
	}
	if purge == nil {
		return nil, fmt.Errorf("project: register: %w", keel.Invalid("Purge", "is required"))
	}
	base, prefix := storage.Split(store)
	joint, err := storage.Join(store, c.store)
	if err != nil {
		return nil, fmt.Errorf("project: register %q with the catalog: %w", prefix, err)
	}
	r := &Registration{c: c, joint: joint, base: base, prefix: prefix, purge: purge}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.services {
		if p != prefix && (strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p)) {
			return nil, fmt.Errorf("project: register %q: %w", prefix, keel.Invalid("Store", "overlaps the registered view %q", p))
		}
	}
	c.services[prefix] = r
	return r, nil
}

// Update runs fn in one Update of the store under the service's and the
// Catalog's views: tx is the service's view, orgs reads the organizations
// in the same transaction, so that an organization whose deletion starts
// meanwhile makes the commit fail or retry, as any conflicting write does.
// The closure may run more than once, as any Update's.
func (r *Registration) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, orgs Orgs) error) (err error) {
	defer prefixErr(&err)
	return r.joint.Update(ctx, func(ctx context.Context, tx, cat storage.Tx) error {
		return pass(fn(ctx, tx, Orgs{tx: cat}))
	})
}

// View runs fn in one View of the store under the service's and the
// Catalog's views: tx is the service's view, orgs reads the organizations
// of the same snapshot.
func (r *Registration) View(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, orgs Orgs) error) (err error) {
	defer prefixErr(&err)
	_, cat := storage.Split(r.c.store)
	return r.base.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return pass(fn(ctx, storage.SubTx(tx, r.prefix), Orgs{tx: storage.SubTx(tx, cat)}))
	})
}

// registered returns the registered services by prefix.
func (c *Catalog) registered() map[string]*Registration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.services)
}

// startDeletion is step 1: it returns the deletion to finish, the one
// already pending for name or a new one. A caller without delete on the
// organization gets keel.KindNotFound, and the store is left as it was.
func (c *Catalog) startDeletion(ctx context.Context, name string) (deletion, error) {
	services := slices.Sorted(maps.Keys(c.registered()))
	fresh := deletion{ID: randid.String(randid.Base58, 16), Services: services}
	var d deletion
	err := c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		pending, err := getDeletion(tx, name)
		if err != nil {
			return err
		}
		if pending != nil {
			d = *pending
			return hide(keel.Authorize(ctx, c.authz, keel.CapDelete, orgResource(name)), "organization", name)
		}
		if _, err := c.visibleOrg(ctx, tx, name, keel.CapDelete); err != nil {
			return err
		}
		d = fresh
		raw, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode deletion: %v: %w", err, keel.KindInternal)
		}
		if err := tx.Delete(orgKey(name)); err != nil {
			return err
		}
		return tx.Put(delKey(name), raw)
	})
	return d, err
}

// finish is steps 2 and 3 of the deletion d of the organization name. It
// returns nil when another caller finished d first.
func (c *Catalog) finish(ctx context.Context, name string, d deletion) error {
	services := c.registered()
	prefixes := slices.Clone(d.Services)
	for p := range services {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	for _, p := range slices.Compact(prefixes) {
		r, ok := services[p]
		if !ok {
			return fmt.Errorf("organization %q is being deleted and the data under %q is left: the service that keeps it is not registered with this Catalog (build it over this Catalog, then retry): %w", name, p, keel.KindConflict)
		}
		err := r.purge(ctx, name, c.guard(r.base, r.prefix, name, d.ID))
		if errors.Is(err, errDeletionOver) {
			return nil
		}
		if err != nil {
			return errPrefix.Wrapf(err, "delete organization %q: the data under %q", name, p)
		}
	}
	base, prefix := storage.Split(c.store)
	_, err := storage.Batch(ctx, c.guard(base, prefix, name, d.ID), orgIx(name), &storage.BatchOptions{Writes: 2}, purgeIndexKey(name))
	if errors.Is(err, errDeletionOver) {
		return nil
	}
	if err != nil {
		return errPrefix.Wrapf(err, "delete organization %q", name)
	}
	return c.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, err := getDeletion(tx, name)
		if err != nil || cur == nil || cur.ID != d.ID {
			return err
		}
		return tx.Delete(delKey(name))
	})
}

// purgeIndexKey deletes a key of the index of org and the record it names:
// the records of projects, workspaces and teams are each named by one
// name-index key, so that deleting both in one transaction leaves no
// record that a later run could not find.
func purgeIndexKey(org string) func(tx storage.Tx, key string, value []byte) error {
	ix := orgIx(org)
	return func(tx storage.Tx, key string, value []byte) error {
		rest, id := key[len(ix):], string(value)
		var record string
		switch {
		case strings.HasPrefix(rest, "prjname/"):
			record = prjKey(id)
		case strings.HasPrefix(rest, "wsname/"):
			record = wsKey(id)
		case strings.HasPrefix(rest, "teamname/"):
			record = teamKey(id)
		}
		if record != "" && validID(id) {
			if err := tx.Delete(record); err != nil {
				return err
			}
		}
		return tx.Delete(key)
	}
}

// FinishDeletions finishes every organization deletion a crash or an
// error stopped midway, and the deletion of the access of every team and
// project deleted (see DeleteTeam and Delete), and returns the errors of
// those it could not finish, joined. It asks the Authorizer nothing: it
// only finishes deletions that a caller with the right started. A program
// may call it when it starts; without it, a stopped organization deletion
// is finished when the name is deleted or created again, and the access
// of a deleted team or project stays stored (read by no one).
func (c *Catalog) FinishDeletions(ctx context.Context) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, c.obs, c.clock, "project.FinishDeletions", "", nil, func(ctx context.Context) error {
		return c.finishDeletions(ctx)
	})
}

func (c *Catalog) finishDeletions(ctx context.Context) (err error) {
	defer prefixErr(&err)
	cleanupErr := c.finishCleanups(ctx)
	pending := map[string]deletion{}
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		clear(pending)
		return tx.Scan(delPrefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			name := key[len(delPrefix):]
			d, err := getDeletion(tx, name)
			if err != nil || d == nil {
				return err
			}
			pending[name] = *d
			return nil
		})
	})
	if err != nil {
		return errors.Join(cleanupErr, err)
	}
	errs := []error{cleanupErr}
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		errs = append(errs, c.finish(ctx, name, pending[name]))
	}
	return errors.Join(errs...)
}

// guard returns the view of base under prefix whose Updates first check,
// in their own transaction, that the deletion id of the organization name
// is still pending, and fail with errDeletionOver otherwise.
func (c *Catalog) guard(base storage.Store, prefix, name, id string) storage.Store {
	_, cat := storage.Split(c.store)
	return &guarded{base: base, prefix: prefix, catalog: cat, name: name, id: id}
}

// guarded is the store a PurgeFunc works through.
type guarded struct {
	base     storage.Store
	prefix   string // the view's prefix in base
	catalog  string // the Catalog's prefix in base
	name, id string // the organization and its deletion
}

// View and Update are a storage.Store's, for a service's PurgeFunc: their
// errors are the store's and the service's, passed on unchanged (pass),
// and DeleteOrganization names them in its own.
func (g *guarded) View(ctx context.Context, fn func(context.Context, storage.Tx) error) (err error) {
	defer prefixErr(&err)
	return pass(g.base.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, storage.SubTx(tx, g.prefix))
	}))
}

func (g *guarded) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) (err error) {
	defer prefixErr(&err)
	return pass(g.base.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		d, err := getDeletion(storage.SubTx(tx, g.catalog), g.name)
		if err != nil {
			return err
		}
		if d == nil || d.ID != g.id {
			return errDeletionOver
		}
		return fn(ctx, storage.SubTx(tx, g.prefix))
	}))
}

// Limits are those of the view, with one read kept for the check of each
// Update.
func (g *guarded) Limits() storage.Limits {
	l := g.base.Limits()
	if l.MaxKeySize > 0 {
		l.MaxKeySize -= len(g.prefix)
	}
	if l.MaxTxReads > 1 {
		l.MaxTxReads--
	}
	return l
}

func (g *guarded) Close() error { return nil }
