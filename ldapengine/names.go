package ldapengine

import (
	"context"
	"regexp"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// maxNameLen bounds the name of a role or library set, slashes included.
const maxNameLen = 512

// nameSegment is one segment of a role or set name.
var nameSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$`)

// nameRule is the rule of role and set names, for errors.
const nameRule = "must be segments of 1 to 128 letters, digits, '_', '.', '@', '-', each starting with a letter or digit, joined by '/' (at most 512 bytes)"

// validName reports whether name follows the rule of role and set names:
// hierarchical, as Vault's ("team/app"), each segment a plain name.
func validName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for seg := range strings.SplitSeq(name, "/") {
		if !nameSegment.MatchString(seg) {
			return false
		}
	}
	return true
}

// checkRoleName checks the name of a static or dynamic role.
func checkRoleName(name string) error {
	if !validName(name) {
		return invalid("Name", nameRule)
	}
	return nil
}

// checkSetName checks the name of a library set: the rule of role names.
func checkSetName(name string) error { return checkRoleName(name) }

// nameKind is a kind of object that the user names.
type nameKind string

const (
	staticRoleName  nameKind = "static role"
	dynamicRoleName nameKind = "dynamic role"
	setName         nameKind = "library set"
)

// namedRoute is a route of the engine whose path holds the name of an
// object of kind: prefix, the name, suffix.
type namedRoute struct {
	kind           nameKind
	prefix, suffix string
}

func (r namedRoute) String() string { return r.prefix + ":name" + r.suffix }

// nameIn returns the name that path holds when r matches path: a
// well-formed name between r's prefix and suffix.
func (r namedRoute) nameIn(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, r.prefix)
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, r.suffix)
	return name, ok && validName(name)
}

// namedRoutes are the routes of Vault's ldap and openldap engines (and of
// every adapter that serves them) whose path holds a name chosen by the
// user, relative to the mount, in the order in which Vault's router tries
// them: the first route that matches a path takes it. The library's
// actions come before library/:name, as names hold "/". Routes without a
// name (config, rotate-root) and LIST paths (a folder, ending in "/")
// never equal the path of a name.
var namedRoutes = []namedRoute{
	{setName, "library/manage/", "/check-in"},
	{setName, "library/", "/check-in"},
	{setName, "library/", "/check-out"},
	{setName, "library/", "/status"},
	{dynamicRoleName, "role/", ""},
	{dynamicRoleName, "creds/", ""},
	{staticRoleName, "static-role/", ""},
	{staticRoleName, "static-cred/", ""},
	{staticRoleName, "rotate-role/", ""},
	{setName, "library/", ""},
}

// checkNewName checks the name of an object of kind that is written
// (created or updated): the rule of names (checkRoleName), and that each
// path of the object means the object's route only. A path that an
// earlier route of namedRoutes also matches, for another name, would be
// served as that route, and would need its rights: the set "manage/lib1",
// whose check-in path library/manage/lib1/check-in is the forced check-in
// of the set "lib1", or the set "a/status", whose path library/a/status is
// the status of the set "a". Such a name is a keel.KindInvalid on Name.
// Reads, check-outs, check-ins and deletes take any well-formed name: one
// that cannot be written is not found, and an object stored under it
// before the rule can still be read and deleted.
func checkNewName(kind nameKind, name string) error {
	if err := checkRoleName(name); err != nil {
		return err
	}
	for _, own := range namedRoutes {
		if own.kind != kind {
			continue
		}
		path := own.prefix + name + own.suffix
		for _, r := range namedRoutes {
			other, ok := r.nameIn(path)
			if !ok {
				continue
			}
			if r != own { // the same route would hold the same name
				return invalid("Name", "must not give a path that means another route: %s, the path %s of %s %q, is %s of %s %q",
					path, own, kind, name, r, r.kind, other)
			}
			break
		}
	}
	return nil
}

// defaultListLimit is the number of names in a page of ListStaticRoles,
// ListDynamicRoles and ListLibrarySets when keel.ListRequest.Limit is 0
// or less.
const defaultListLimit = 1000

// listChildren returns one page of what is directly under path among the
// names stored under prefix, as Vault's LIST does: a name, or a folder
// ending in "/" once for every deeper name, in ascending byte order. path
// is "" (the top) or a folder, with or without its trailing "/". The page
// starts after r.Cursor, the last name of the page before, which need not
// exist any more; Next is the last name given when more may follow. It
// needs list on resource+"/"+path.
func (e *Engine) listChildren(ctx context.Context, resource, prefix, path string, r keel.ListRequest) (keel.Page[string], error) {
	path = strings.TrimSuffix(path, "/")
	var v keel.Validation
	if path != "" && !validName(path) {
		v.Add("Path", nameRule)
	}
	if !validCursor(r.Cursor) {
		v.Add("Cursor", "must be empty or the Next of a page of this list")
	}
	if err := validation(&v); err != nil {
		return keel.Page[string]{}, err
	}
	if path != "" {
		path += "/"
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapList, resource+"/"+path); err != nil {
		return keel.Page[string]{}, err
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var p keel.Page[string]
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		p = keel.Page[string]{Items: make([]string, 0, min(limit, 64))}
		return storage.Children(tx, prefix+path, r.Cursor, func(name string) error {
			if len(p.Items) == limit {
				p.Next = p.Items[limit-1]
				return storage.StopScan
			}
			p.Items = append(p.Items, name)
			return nil
		})
	})
	if err != nil {
		return keel.Page[string]{}, err
	}
	return p, nil
}

// validCursor reports whether c can be the Next of a page of
// listChildren: "", or one segment of a stored name, with a "/" after it
// for a folder. Stored names of an earlier version may break today's rule
// of names, so the segment is not checked further.
func validCursor(c string) bool {
	seg := strings.TrimSuffix(c, "/")
	return c == "" || (seg != "" && len(seg) <= maxNameLen && !strings.Contains(seg, "/"))
}
