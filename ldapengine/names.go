package ldapengine

import (
	"context"
	"regexp"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// MaxNameLen bounds the name of a role or library set, slashes included.
const MaxNameLen = 512

// nameSegment is one segment of a role or set name.
var nameSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$`)

// nameRule is the rule of role and set names, for errors.
const nameRule = "must be segments of 1 to 128 letters, digits, '_', '.', '@', '-', each starting with a letter or digit, joined by '/' (at most 512 bytes)"

// validName reports whether name follows the rule of role and set names:
// hierarchical, as Vault's ("team/app"), each segment a plain name.
func validName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
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
		return keel.Invalid("Name", nameRule)
	}
	return nil
}

// checkSetName checks the name of a library set: the rule of role names.
func checkSetName(name string) error { return checkRoleName(name) }

// listChildren lists what is directly under path among the names stored
// under prefix, as Vault's LIST does: a name, or a folder ending in "/"
// once for every deeper name. path is "" (the top) or a folder, with or
// without its trailing "/". It needs list on resource+"/"+path.
func (e *Engine) listChildren(ctx context.Context, resource, prefix, path string) ([]string, error) {
	path = strings.TrimSuffix(path, "/")
	if path != "" && !validName(path) {
		return nil, keel.Invalid("Path", nameRule)
	}
	if path != "" {
		path += "/"
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapList, resource+"/"+path); err != nil {
		return nil, err
	}
	names := []string{}
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		names = names[:0]
		return storage.Children(tx, prefix+path, "", func(name string) error {
			names = append(names, name)
			return nil
		})
	})
	return names, err
}
