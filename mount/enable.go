package mount

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// maxPathLen is the longest mount path, in bytes, trailing "/" included.
const maxPathLen = 256

// reserved are the paths under which nothing can be mounted: Vault's own.
var reserved = []string{"sys/", "auth/", "identity/", "cubbyhole/"}

// EnableRequest asks for a new mount.
type EnableRequest struct {
	// Path is where to mount, with or without a trailing "/". See the
	// package documentation for its rules.
	Path string
	// Type is the engine's type: "kv", "ldap", "openldap", or one of
	// Options.Types.
	Type string
	// Description is free text.
	Description string
	// Options are the engine's options, checked by its type. kv:
	// "version" ("1" or empty) and "leased_passthrough" (a boolean); ldap
	// and openldap: none.
	Options map[string]string
	// DefaultTTL is the mount's default lease TTL; zero: the system's.
	DefaultTTL time.Duration
	// MaxTTL is the mount's max lease TTL; zero: the system's.
	MaxTTL time.Duration
}

// Enable adds a mount and serves it. It needs keel.CapCreate on
// "sys/mounts/PATH".
//
// Every rule is checked before anything is written: the path's, the
// type's options, the lease TTLs against the lease manager's limits, and
// that no mount (served or not) is at the path, above it or below it.
// Then one transaction adds the entry to the stored table. Enable fails
// with an error of kind keel.KindInvalid naming each field that breaks a
// rule, and then the store is as it was.
func (t *Table) Enable(ctx context.Context, req EnableRequest) (_ Entry, err error) {
	defer errPrefix.Set(&err)
	return keel.Observe(ctx, t.obs, t.clock, "mount.Enable", req.Path, req, func(ctx context.Context) (Entry, error) {
		return t.enable(ctx, req)
	})
}

func (t *Table) enable(ctx context.Context, req EnableRequest) (_ Entry, err error) {
	defer errPrefix.Set(&err)
	path := normPath(req.Path)
	if err := keel.Authorize(ctx, t.auth, keel.CapCreate, "sys/mounts/"+path); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "enable")
	}
	t.opMu.Lock()
	defer t.opMu.Unlock()
	if err := t.checkOpen(); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "enable %q", path)
	}
	e, err := t.newEntry(req)
	if err != nil {
		return Entry{}, errPrefix.Wrapf(err, "enable %q", path)
	}
	if err := t.checkOverlap(e.Path); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "enable %q", path)
	}
	for _, r := range t.reserved {
		if overlaps(r, e.Path) {
			return Entry{}, fmt.Errorf("mount: enable %q: %w", path, keel.Invalid("Path", "%q is served otherwise by the program (Options.Reserved)", r))
		}
	}
	m := &Mount{Entry: e}
	if err := t.build(m); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "enable %q", path)
	}
	err = t.changeTable(ctx, func(tx storage.Tx, entries []Entry) ([]Entry, error) {
		for _, o := range entries {
			if overlaps(o.Path, e.Path) {
				return nil, keel.Invalid("Path", "the mount %q is in the way", o.Path)
			}
		}
		if err := putGuard(tx, e); err != nil {
			return nil, err
		}
		return append(entries, e), nil
	})
	if err != nil {
		t.leases.Unregister(e.Path)
		return Entry{}, errPrefix.Wrapf(err, "enable %q", path)
	}
	t.serve(m)
	return e, nil
}

// checkOpen fails once the table is closed.
func (t *Table) checkOpen() error {
	if t.isClosed() {
		return fmt.Errorf("mount: the table is closed: %w", keel.KindUnavailable)
	}
	return nil
}

// TuneRequest changes a mount's settings; a nil field keeps the stored
// value.
type TuneRequest struct {
	Description *string
	DefaultTTL  *time.Duration
	MaxTTL      *time.Duration
}

// Tune changes the settings of the served mount at path and rebuilds its
// engine with them. It needs keel.CapUpdate on "sys/mounts/PATH/tune". It
// fails with keel.KindNotFound when no mount is served at path and
// keel.KindInvalid for TTLs beyond the lease manager's limits; then the
// store is as it was. The new settings are stored before the engine is
// rebuilt: when the rebuild fails, Tune returns the stored entry with that
// error, and the mount is listed with it (Mount.Err) and not served.
func (t *Table) Tune(ctx context.Context, path string, req TuneRequest) (_ Entry, err error) {
	defer errPrefix.Set(&err)
	return keel.Observe(ctx, t.obs, t.clock, "mount.Tune", path, req, func(ctx context.Context) (Entry, error) {
		return t.tune(ctx, path, req)
	})
}

func (t *Table) tune(ctx context.Context, path string, req TuneRequest) (_ Entry, err error) {
	defer errPrefix.Set(&err)
	path = normPath(path)
	if err := keel.Authorize(ctx, t.auth, keel.CapUpdate, "sys/mounts/"+path+"tune"); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "tune")
	}
	t.opMu.Lock()
	defer t.opMu.Unlock()
	if err := t.checkOpen(); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "tune %q", path)
	}
	t.mu.RLock()
	old, ok := t.mounts[path]
	t.mu.RUnlock()
	if !ok || !old.Served() {
		return Entry{}, fmt.Errorf("mount: no mount at %q: %w", path, keel.KindNotFound)
	}
	e := old.Entry
	if req.Description != nil {
		e.Description = *req.Description
	}
	if req.DefaultTTL != nil {
		e.DefaultTTL = *req.DefaultTTL
	}
	if req.MaxTTL != nil {
		e.MaxTTL = *req.MaxTTL
	}
	if err := t.leases.CheckMount(lease.Mount{Path: e.Path, DefaultTTL: e.DefaultTTL, MaxTTL: e.MaxTTL}); err != nil {
		return Entry{}, errPrefix.Wrapf(err, "tune %q", path)
	}
	err = t.changeTable(ctx, func(_ storage.Tx, entries []Entry) ([]Entry, error) {
		for i := range entries {
			if entries[i].Path == path && entries[i].UUID == e.UUID && !entries[i].Disabling {
				entries[i] = e
				return entries, nil
			}
		}
		return nil, fmt.Errorf("mount: no mount at %q: %w", path, keel.KindNotFound)
	})
	if err != nil {
		return Entry{}, errPrefix.Wrapf(err, "tune %q", path)
	}
	t.unbuild(old)
	m := t.open(e)
	t.serve(m)
	return e, m.Err
}

// newEntry checks req and returns its entry, with a new UUID and accessor.
func (t *Table) newEntry(req EnableRequest) (Entry, error) {
	var v keel.Validation
	path := normPath(req.Path)
	if why := pathRule(path); why != "" {
		v.Add("Path", "%s", why)
	}
	opts, err := t.checkOptions(req.Type, req.Options)
	for _, fe := range keel.FieldErrors(err) {
		v.Add(fe.Field, "%s", fe.Rule)
	}
	if err != nil && len(keel.FieldErrors(err)) == 0 {
		return Entry{}, err
	}
	if why := pathRule(path); why == "" {
		if err := t.leases.CheckMount(lease.Mount{Path: path, DefaultTTL: req.DefaultTTL, MaxTTL: req.MaxTTL}); err != nil {
			for _, fe := range keel.FieldErrors(err) {
				v.Add(fe.Field, "%s", fe.Rule)
			}
		}
	}
	if err := v.Err(); err != nil {
		return Entry{}, err
	}
	acc := make([]byte, 4)
	rand.Read(acc)
	id := uuid.NewString()
	return Entry{
		Path: path, Type: req.Type, Description: req.Description,
		UUID: id, Accessor: req.Type + "_" + hex.EncodeToString(acc),
		Options: opts, DefaultTTL: req.DefaultTTL, MaxTTL: req.MaxTTL,
		Data: keyedPrefix(req.Type, id),
	}, nil
}

// checkStored checks a stored entry with the rules of Enable.
func (t *Table) checkStored(e Entry) error {
	var v keel.Validation
	if why := pathRule(e.Path); why != "" {
		v.Add("Path", "%s", why)
	}
	_, err := t.checkOptions(e.Type, e.Options)
	for _, fe := range keel.FieldErrors(err) {
		v.Add(fe.Field, "%s", fe.Rule)
	}
	if err != nil && len(keel.FieldErrors(err)) == 0 {
		return errPrefix.Wrapf(err, "stored mount %q", e.Path)
	}
	if e.UUID == "" {
		v.Add("UUID", "is required")
	} else if e.Data != "" && e.Data != keyedPrefix(e.Type, e.UUID) {
		v.Add("Data", "must be %q, the part of the store of the mount's UUID", keyedPrefix(e.Type, e.UUID))
	}
	if err := v.Err(); err != nil {
		return errPrefix.Wrapf(err, "stored mount %q", e.Path)
	}
	return nil
}

// checkOverlap refuses a path at, above or below a mount of the table.
func (t *Table) checkOverlap(path string) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for p := range t.mounts {
		if overlaps(p, path) {
			return keel.Invalid("Path", "the mount %q is in the way", p)
		}
	}
	return nil
}

func overlaps(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }

// normPath is path with one trailing "/" and no leading one.
func normPath(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/") + "/"
}

// pathRule returns why path, normalised, is not a valid mount path, or "".
// A mount path is at most 256 bytes of segments of ASCII letters,
// digits and "-", "_", ".", "+", "@", "~", separated by "/"; it holds no
// ".." and no segment ".", and does not lie under a reserved path.
func pathRule(path string) string {
	if path == "/" {
		return "is required"
	}
	if len(path) > maxPathLen {
		return fmt.Sprintf("must be at most %d bytes, not %d", maxPathLen, len(path))
	}
	for _, c := range []byte(path) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.+@~/", c) >= 0
		if !ok {
			return fmt.Sprintf("must hold only letters, digits and - _ . + @ ~ between slashes, not %q", c)
		}
	}
	if strings.Contains(path, "..") {
		return `must not contain ".."`
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(path, "/"), "/") {
		switch seg {
		case "":
			return `must not contain an empty segment ("//")`
		case ".":
			return `must not contain a "." segment`
		}
	}
	for _, r := range reserved {
		if strings.HasPrefix(path, r) {
			return fmt.Sprintf("%q is reserved", r)
		}
	}
	return ""
}

// dataView is the view of the store that e's engine keeps its data in:
// its part of the store, guarded by e's guard key, so that the engine of a
// mount that is gone (disabled by another table, or kept by the program
// across Disable) can no longer read or write it.
func (t *Table) dataView(e Entry) storage.Store {
	guarded := storage.Guard(t.store, guardKey(e), fmt.Sprintf("mount %q was disabled", e.Path))
	return storage.Sub(guarded, dataPrefix(e))
}

// dataPrefix is the key prefix of the data of e's engine.
func dataPrefix(e Entry) string {
	if e.Data != "" || e.Type == "kv" {
		return keyedPrefix(e.Type, e.UUID)
	}
	// An ldap or openldap mount enabled before entries said where their
	// data is: keyed by its path.
	return ldapPrefix + url.PathEscape(strings.TrimSuffix(e.Path, "/")) + "/"
}

// keyedPrefix is the key prefix of the data of the mount of type typ
// whose UUID is id: "kv/UUID/" for kv, "mounts/UUID/" for other types.
func keyedPrefix(typ, id string) string {
	if typ == "kv" {
		return kvPrefix + id + "/"
	}
	return mountsPrefix + id + "/"
}
