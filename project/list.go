package project

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// ListRequest asks for one page of the projects of an organization.
type ListRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: DefaultPageSize; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the filtered, sorted list (0, the default: its first project): a
	// transport renders numbered pages with it. It is at least 0.
	Offset int
	// Query keeps the projects whose name holds it, ignoring case.
	Query string
	// Names keeps the projects of these names, ignoring case; when not
	// empty, Query is ignored.
	Names []string
	// CanUpdate keeps the projects the caller may update.
	CanUpdate bool
	// CanCreateWorkspace keeps the projects the caller may create
	// workspaces in.
	CanCreateWorkspace bool
	// Sort is "name", "-name" (descending), or "" (the same order as
	// "name", which is stable: names are unique ignoring case).
	Sort string
}

// List returns one page of the projects of org, in name order (case
// folded; Sort "-name" reverses it), with Total, the projects of the
// organization, and Matching, those the filters keep. It needs list on
// "organizations/<org>/projects"; an organization the caller cannot read
// is not found. A page past the end is empty.
//
// Projects are read from the name index: without filters a page reads
// the index keys up to its start (a cursor of sort "name" seeks to it)
// and the records of its own projects; with Query or permission filters,
// every index entry is read and the matches counted, and only the page's
// records are loaded. The organization's other records are never read.
func (c *Catalog) List(ctx context.Context, org string, r ListRequest) (_ keel.CountedPage[Project], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, c.obs, c.clock, "project.List", org, r, func(ctx context.Context) (keel.CountedPage[Project], error) {
		return c.doList(ctx, org, r)
	})
}

func (c *Catalog) doList(ctx context.Context, org string, r ListRequest) (_ keel.CountedPage[Project], err error) {
	defer prefixErr(&err)
	switch r.Sort {
	case "", "name", "-name":
	default:
		return keel.CountedPage[Project]{}, keel.Invalid("Sort", "must be name or -name")
	}
	desc := r.Sort == "-name"
	var out keel.CountedPage[Project]
	err = c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.CountedPage[Project]{Page: keel.Page[Project]{Items: []Project{}}}
		o, err := c.visibleOrg(ctx, tx, org, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapList, projectsResource(org)); err != nil {
			return hide(err, "organization", org)
		}
		pg, err := pager.New(r.ListRequest, r.Offset, desc, DefaultPageSize, MaxPageSize)
		if err != nil {
			return err
		}
		out.Total = o.ProjectCount
		var ids []string
		if len(r.Names) > 0 || r.Query != "" || r.CanUpdate || r.CanCreateWorkspace {
			keys, all, err := c.matching(ctx, tx, org, r)
			if err != nil {
				return err
			}
			if desc {
				slices.Reverse(keys)
				slices.Reverse(all)
			}
			for i, k := range keys {
				if pg.Take(k) {
					ids = append(ids, all[i])
				}
			}
			out.Matching, out.Next = len(all), pg.Next()
		} else {
			out.Matching = o.ProjectCount
			if ids, out.Next, err = window(tx, prjNames(org), pg, o.ProjectCount); err != nil {
				return err
			}
		}
		for _, id := range ids {
			rec, err := getProject(tx, id)
			if err != nil {
				return err
			}
			p, err := c.public(ctx, rec)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, p)
		}
		return nil
	})
	return out, err
}

// window returns the values of the page pg asks for of the index under
// prefix, of count keys, reading keys only before the page, and the Next
// of the page: the cursor of its last key, the key after prefix.
func window(tx storage.Tx, prefix string, pg *pager.Pager, count int) ([]string, string, error) {
	var keys, vals []string
	collect := func(key string, v []byte) error {
		keys, vals = append(keys, key[len(prefix):]), append(vals, string(v))
		return nil
	}
	more := false
	switch {
	case pg.Cursor == "" && !pg.Desc:
		if err := storage.Window(tx, prefix, pg.Offset, pg.Limit, collect); err != nil {
			return nil, "", err
		}
		more = pg.Offset < count-len(keys)
	case pg.Cursor == "":
		hi := count - pg.Offset
		lo := max(hi-pg.Limit, 0)
		if err := storage.Window(tx, prefix, lo, hi-lo, collect); err != nil {
			return nil, "", err
		}
		more = lo > 0
	case !pg.Desc:
		err := tx.Scan(prefix, storage.ScanOptions{After: prefix + pg.Cursor}, func(key string, v []byte) error {
			if len(keys) == pg.Limit {
				more = true
				return storage.StopScan
			}
			return collect(key, v)
		})
		if err != nil && err != storage.StopScan {
			return nil, "", err
		}
	default:
		// The keys before the cursor: count them, then read the last
		// limit of them.
		n := 0
		err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			if key >= prefix+pg.Cursor {
				return storage.StopScan
			}
			n++
			return nil
		})
		if err != nil && err != storage.StopScan {
			return nil, "", err
		}
		lo := max(n-pg.Limit, 0)
		if err := storage.Window(tx, prefix, lo, n-lo, collect); err != nil {
			return nil, "", err
		}
		more = lo > 0
	}
	if pg.Desc {
		slices.Reverse(keys)
		slices.Reverse(vals)
	}
	if !more || len(keys) == 0 {
		return vals, "", nil
	}
	return vals, keys[len(keys)-1], nil
}

// matching returns the sort keys (folded names) and the ids of the
// projects that match r's filters, in name order.
func (c *Catalog) matching(ctx context.Context, tx storage.Tx, org string, r ListRequest) ([]string, []string, error) {
	prefix := prjNames(org)
	var keys, ids []string
	if len(r.Names) > 0 {
		names := make([]string, 0, len(r.Names))
		for _, n := range r.Names {
			if n = fold(strings.TrimSpace(n)); n != "" && !strings.Contains(n, "/") {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			id, err := lookup(tx, prefix+n)
			if err != nil {
				return nil, nil, err
			}
			if id != "" {
				keys, ids = append(keys, n), append(ids, id)
			}
		}
	} else {
		q := fold(r.Query)
		err := tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			if name := key[len(prefix):]; strings.Contains(name, q) {
				keys, ids = append(keys, name), append(ids, string(v))
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if !r.CanUpdate && !r.CanCreateWorkspace {
		return keys, ids, nil
	}
	var keptKeys, kept []string
	for i, id := range ids {
		ok, err := c.allowedAll(ctx, org, id, r)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			keptKeys, kept = append(keptKeys, keys[i]), append(kept, id)
		}
	}
	return keptKeys, kept, nil
}

// allowedAll reports whether the caller holds every permission the filters
// of opts ask for on the project id.
func (c *Catalog) allowedAll(ctx context.Context, org, id string, opts ListRequest) (bool, error) {
	check := func(capability keel.Capability, resource string) (bool, error) {
		err := keel.Authorize(ctx, c.authz, capability, resource)
		if errors.Is(err, keel.KindForbidden) {
			return false, nil
		}
		return err == nil, err
	}
	if opts.CanUpdate {
		if ok, err := check(keel.CapUpdate, projectResource(org, id)); !ok || err != nil {
			return false, err
		}
	}
	if opts.CanCreateWorkspace {
		if ok, err := check(keel.CapCreate, wsCreateResource(org, id)); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}
