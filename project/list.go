package project

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// ListRequest are the query parameters of a project list.
type ListRequest struct {
	// PageNumber is page[number]; below 1 means the first page.
	PageNumber int
	// PageSize is page[size]; below 1 means DefaultPageSize, above
	// MaxPageSize means MaxPageSize.
	PageSize int
	// Query is q: a case-insensitive substring of the name.
	Query string
	// Names is filter[names]: case-insensitive exact names; when not
	// empty, Query is ignored.
	Names []string
	// CanUpdate is filter[permissions][update]: only projects the caller
	// may update.
	CanUpdate bool
	// CanCreateWorkspace is filter[permissions][create-workspace]: only
	// projects the caller may create workspaces in.
	CanCreateWorkspace bool
	// Sort is "name", "-name", or "" (the same stable order as "name").
	Sort string
}

// Page is one page of projects.
type Page struct {
	Projects []Project
	// Total is status-counts.total: the projects of the organization.
	Total int
	// Matching is status-counts.matching: those that match the filters.
	Matching   int
	Pagination keel.Pagination
}

// normalize applies the defaults and bounds of page numbers and sizes.
func (o *ListRequest) normalize() error {
	var err error
	if o.PageNumber, o.PageSize, err = pageBounds(o.PageNumber, o.PageSize); err != nil {
		return err
	}
	switch o.Sort {
	case "", "name", "-name":
	default:
		return keel.Invalid("Sort", "must be name or -name")
	}
	return nil
}

// pageBounds applies the defaults and bounds of a page number and size:
// a number below 1 is the first page, one above MaxPageNumber is refused
// ("PageNumber"), so that no position in a list overflows; a size below 1
// is DefaultPageSize, one above MaxPageSize is MaxPageSize.
func pageBounds(number, size int) (int, int, error) {
	if number > MaxPageNumber {
		return 0, 0, keel.Invalid("PageNumber", "must be at most %d", MaxPageNumber)
	}
	if number < 1 {
		number = 1
	}
	if size < 1 {
		size = DefaultPageSize
	}
	return number, min(size, MaxPageSize), nil
}

// List returns one page of the projects of org. It needs list on
// "organizations/<org>/projects"; an organization the caller cannot read
// is not found. A page past the end is empty.
//
// Projects are read from the name index: without filters a page reads the
// index up to its end (keys only before it) and the records of its own
// projects; with q or permission filters, every index entry is read and
// the matches counted, and only the page's records are loaded. The
// organization's other records are never read.
func (c *Catalog) List(ctx context.Context, org string, opts ListRequest) (Page, error) {
	if err := opts.normalize(); err != nil {
		return Page{}, err
	}
	var out Page
	err := c.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = Page{}
		o, err := c.visibleOrg(ctx, tx, org, keel.CapRead)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, c.authz, keel.CapList, projectsResource(org)); err != nil {
			return hide(err, "organization", org)
		}
		out.Total = o.ProjectCount
		start := (opts.PageNumber - 1) * opts.PageSize
		var ids []string
		filtered := len(opts.Names) > 0 || opts.Query != "" || opts.CanUpdate || opts.CanCreateWorkspace
		if filtered {
			all, err := c.matching(ctx, tx, org, opts)
			if err != nil {
				return err
			}
			out.Matching = len(all)
			if opts.Sort == "-name" {
				slices.Reverse(all)
			}
			if start < len(all) {
				ids = all[start:min(start+opts.PageSize, len(all))]
			}
		} else {
			out.Matching = o.ProjectCount
			lo, hi := start, start+opts.PageSize
			if opts.Sort == "-name" {
				lo, hi = o.ProjectCount-hi, o.ProjectCount-lo
			}
			err = storage.Window(tx, prjNames(org), lo, hi-max(lo, 0), func(_ string, id []byte) error {
				ids = append(ids, string(id))
				return nil
			})
			if err != nil {
				return err
			}
			if opts.Sort == "-name" {
				slices.Reverse(ids)
			}
		}
		out.Pagination = keel.NewPagination(opts.PageNumber, opts.PageSize, out.Matching)
		out.Projects = make([]Project, 0, len(ids))
		for _, id := range ids {
			rec, err := getProject(tx, id)
			if err != nil {
				return err
			}
			p, err := c.public(ctx, rec)
			if err != nil {
				return err
			}
			out.Projects = append(out.Projects, p)
		}
		return nil
	})
	return out, err
}

// matching returns the ids of the projects that match opts' filters, in
// name order.
func (c *Catalog) matching(ctx context.Context, tx storage.Tx, org string, opts ListRequest) ([]string, error) {
	prefix := prjNames(org)
	var ids []string
	if len(opts.Names) > 0 {
		names := make([]string, 0, len(opts.Names))
		for _, n := range opts.Names {
			if n = fold(strings.TrimSpace(n)); n != "" && !strings.Contains(n, "/") {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			id, err := lookup(tx, prefix+n)
			if err != nil {
				return nil, err
			}
			if id != "" {
				ids = append(ids, id)
			}
		}
	} else {
		q := fold(opts.Query)
		err := tx.Scan(prefix, storage.ScanOptions{}, func(key string, v []byte) error {
			if strings.Contains(key[len(prefix):], q) {
				ids = append(ids, string(v))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !opts.CanUpdate && !opts.CanCreateWorkspace {
		return ids, nil
	}
	kept := ids[:0]
	for _, id := range ids {
		ok, err := c.allowedAll(ctx, org, id, opts)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, id)
		}
	}
	return kept, nil
}

// allowedAll reports whether the caller holds every permission the filters
// of opts ask for on the project id.
func (c *Catalog) allowedAll(ctx context.Context, org, id string, opts ListRequest) (bool, error) {
	check := func(capability keel.Capability, resource string) (bool, error) {
		err := keel.Authorize(ctx, c.authz, capability, resource)
		if errors.Is(err, keel.ErrForbidden) {
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
