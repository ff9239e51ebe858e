package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/jsonobj"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// defaultLeaseDuration is the lease duration a read reports for a secret
// without a "ttl" key when Options.DefaultTTL is zero: 768 hours (2,764,800
// seconds), the system default of Vault.
const defaultLeaseDuration = 768 * time.Hour

// Options configure an Engine. A nil *Options, and the zero value of each
// field, mean the defaults.
type Options struct {
	// Authorizer decides the caller's rights on each operation. Nil
	// allows everything.
	Authorizer keel.Authorizer
	// Observer is told of every operation (see keel.Observer): a read's
	// and a write's data are secret. Nil: none.
	Observer keel.Observer
	// Clock times the operations the Observer is told of. Nil:
	// keel.SystemClock{}.
	Clock keel.Clock
	// DefaultTTL is the mount's default lease duration, reported on a
	// read of a secret without a usable "ttl" key. Zero means
	// 768h; a negative value is refused by New.
	DefaultTTL time.Duration
	// Leases, when not nil, makes the mount leased (Vault's
	// leased_passthrough): every Read issues a lease of the secret's lease
	// duration through it. It is the lease handle of the engine's mount
	// (package mount registers the mount and hands it over); New names
	// the engine the mount's Revoker with it (lease.Issuer.SetRevoker):
	// revoking a leased read has nothing to undo, and renewing it answers
	// the secret read anew, as Vault's kv engine does.
	Leases *lease.Issuer
}

// Secret is what Read returns: the pairs stored at a path and the lease
// members of the response envelope.
type Secret struct {
	// Data holds every pair stored at the path, decoded from JSON:
	// strings, json.Number for numbers (exactly as written), bool,
	// nil, []any and map[string]any. It belongs to the caller.
	Data map[string]any `keel:"secret"`
	// LeaseDuration is the value of the "ttl" key (else of the "lease"
	// key), or the mount's default when there is none or it cannot be
	// parsed; in a leased mount a zero value is replaced by the default.
	LeaseDuration time.Duration
	// LeaseID is the id of the lease issued for this read; empty unless
	// the mount is leased.
	LeaseID string
	// Renewable is true for the read of a leased mount of a secret
	// that says how long it lasts (a "ttl" or "lease" key).
	Renewable bool
	// JSON is Data as stored: one JSON object, the encoding of Data
	// (for data written through Write, json.Marshal(Data) gives the same
	// bytes, but for the order of the members of objects that came from
	// Go structs). An adapter that answers in JSON may copy it out
	// instead of encoding Data again. It belongs to the caller.
	JSON []byte `keel:"secret"`
}

// Engine is a key-value secrets engine, version 1, mounted at one path.
// Create one with New; the zero Engine is not usable. An Engine holds no
// state besides its configuration: it is safe for concurrent use, and
// several Engines may share one store if each has its own part of it.
type Engine struct {
	store      storage.Store
	mount      string
	authz      keel.Authorizer
	defaultTTL time.Duration
	leases     *lease.Issuer
	obs        keel.Observer
	clock      keel.Clock
}

// New returns an Engine that keeps its secrets in store, at keys equal to
// their paths: the caller gives the engine a store of its own, typically
// storage.Sub(root, "kv/<mount id>/"). mount is the path the engine is
// mounted at, without slashes at the ends ("secret", "team/secret"); it
// prefixes the resources given to the Authorizer and the paths of leases.
//
// New fails with an error of kind keel.KindInvalid when store is nil, mount
// breaks the rules of paths (see the package documentation),
// opts.DefaultTTL is negative, or opts.Leases issues the leases of another
// mount than mount + "/".
func New(store storage.Store, mount string, opts *Options) (*Engine, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var v keel.Validation
	if store == nil {
		v.Add("Store", "is required")
	}
	if rule := pathRule(mount); rule != "" {
		v.Add("Mount", "%s", rule)
	}
	if o.DefaultTTL < 0 {
		v.Add("Opts.DefaultTTL", "must not be negative")
	}
	if store != nil {
		if err := storage.CheckClaim(store, ClaimKind); err != nil {
			v.Add("Store", "%s", keel.FieldErrors(err)[0].Rule)
		}
	}
	if o.Leases != nil && o.Leases.Mount() != mount+"/" {
		v.Add("Opts.Leases", "issues the leases of the mount %q, not %q", o.Leases.Mount(), mount+"/")
	}
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("kv: %w", err)
	}
	if o.DefaultTTL == 0 {
		o.DefaultTTL = defaultLeaseDuration
	}
	e := &Engine{
		store:      store,
		mount:      mount,
		authz:      o.Authorizer,
		defaultTTL: o.DefaultTTL,
		leases:     o.Leases,
		obs:        o.Observer,
		clock:      o.Clock,
	}
	if e.leases != nil {
		e.leases.SetRevoker(leaseEnds{e})
	}
	return e, nil
}

// ClaimKind is the kind of the part of a store a composition root lays
// out for kv engines (see storage.Claim).
const ClaimKind = "kv"

// leaseEnds is the lease.Revoker of a leased mount's reads: revoking one
// has nothing to undo (the secret stays, as in Vault), and renewing one
// answers the secret read anew (a lease.Refresher).
type leaseEnds struct{ e *Engine }

// Revoke does nothing: a leased read gave out no credential.
func (leaseEnds) Revoke(context.Context, lease.Lease) error { return nil }

// Refresh answers the renewal of the lease l of a leased read, as Vault's
// kv engine does: with the secret read anew, and no new lease. The lease
// manager calls it once it has checked the caller's right to renew. It
// fails with an error of kind keel.KindNotFound when the secret is gone,
// and of kind keel.KindInvalid (field "Path") when the lease's path is not
// under the engine's mount.
func (r leaseEnds) Refresh(ctx context.Context, l lease.Lease) (any, error) {
	path, ok := strings.CutPrefix(l.Path, r.e.mount+"/")
	if !ok {
		return nil, fmt.Errorf("kv: renew: %w", keel.Invalid("Path", "is not under the mount %q", r.e.mount))
	}
	if err := checkPath(path); err != nil {
		return nil, fmt.Errorf("kv: renew: %w", err)
	}
	s, err := r.e.load(ctx, path)
	if err != nil {
		return nil, err
	}
	return s.Data, nil
}

// Mount returns the path the engine is mounted at, as given to New.
func (e *Engine) Mount() string { return e.mount }

// Read returns every pair stored at path, with the lease duration its "ttl"
// key asks for, and issues a lease for the read when the mount is leased.
//
// It needs keel.CapRead on mount/path. It fails with keel.KindInvalid for
// a malformed path, keel.KindForbidden without the right, and
// keel.KindNotFound when nothing is stored at path. A folder (path "" for
// the top of the mount, or ending in "/") holds no value: its read is
// keel.KindNotFound for a caller with read on it and keel.KindForbidden
// for another, as Vault checks the right first. An error of the lease
// manager is returned with its kind, or with keel.KindUnavailable when it
// has none.
func (e *Engine) Read(ctx context.Context, path string) (s Secret, err error) {
	if e.obs == nil {
		return e.read(ctx, path, e.resource(path))
	}
	resource := e.resource(path)
	ctx, op, err := keel.Begin(ctx, e.obs, e.clock, "kv.Read", resource, nil)
	if err != nil {
		return Secret{}, fmt.Errorf("kv: read %q: %w", path, err)
	}
	if op != nil {
		defer func() { op.End(s, err) }()
	}
	return e.read(ctx, path, resource)
}

// read is Read; resource is e.resource(path), made once for the Observer
// and the checks.
func (e *Engine) read(ctx context.Context, path, resource string) (Secret, error) {
	if folder, ok := strings.CutSuffix(path, "/"); path == "" || ok && pathRule(folder) == "" {
		if err := e.authorize(ctx, keel.CapRead, resource); err != nil {
			return Secret{}, fmt.Errorf("kv: read %q: %w", path, err)
		}
		return Secret{}, fmt.Errorf("kv: read %q: a folder holds no value: %w", path, keel.KindNotFound)
	}
	if err := checkPath(path); err != nil {
		return Secret{}, fmt.Errorf("kv: read: %w", err)
	}
	if err := e.authorize(ctx, keel.CapRead, resource); err != nil {
		return Secret{}, fmt.Errorf("kv: read %q: %w", path, err)
	}
	s, err := e.load(ctx, path)
	if err != nil || e.leases == nil {
		return s, err
	}
	// As Vault computes a registered lease's TTL: zero means the
	// mount's default.
	if s.LeaseDuration == 0 {
		s.LeaseDuration = e.defaultTTL
	}
	// As Vault: the lease is renewable when the secret says how long it
	// lasts (a "ttl" or "lease" key).
	_, hasTTL := s.Data[ttlKey]
	_, hasLease := s.Data[legacyTTLKey]
	renewable := hasTTL || hasLease
	l, err := e.leases.Issue(ctx, lease.IssueRequest{Path: resource, TTL: s.LeaseDuration, Renewable: renewable})
	if err != nil {
		if keel.KindOf(err) == keel.KindUnknown {
			return Secret{}, fmt.Errorf("kv: issue lease for %q: %w: %w", path, keel.KindUnavailable, err)
		}
		return Secret{}, fmt.Errorf("kv: issue lease for %q: %w", path, err)
	}
	s.LeaseID, s.Renewable = l.ID, renewable
	if granted := l.ExpireTime.Sub(l.IssueTime); granted > 0 && granted < s.LeaseDuration {
		s.LeaseDuration = granted
	}
	return s, nil
}

// load reads the secret at path, with its lease duration and no lease.
func (e *Engine) load(ctx context.Context, path string) (Secret, error) {
	var raw []byte
	// Two copies: the stored JSON and the decoded data are both returned.
	err := storage.Reserving(ctx, 2, func(ld *storage.Loader) error {
		return e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			raw, err = ld.Get(tx, path)
			return err
		})
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Secret{}, fmt.Errorf("kv: no secret at %q: %w", path, keel.KindNotFound)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("kv: read %q: %w", path, err)
	}
	data, err := decodeData(raw)
	if err != nil {
		return Secret{}, fmt.Errorf("kv: secret at %q is not a JSON object (%v): %w", path, err, keel.KindInternal)
	}
	return Secret{Data: data, LeaseDuration: e.leaseDuration(data), JSON: raw}, nil
}

// defaultListLimit is how many names a page of List holds when the request
// sets no limit.
const defaultListLimit = 1000

// List returns a page of the names of the immediate children of the folder
// path, in ascending byte order: a secret by its last segment ("db"), a
// folder by its segment and a slash ("app/"). A name that is both a secret
// and a folder is listed twice, as "a" and "a/". path "" (or "/") lists
// the top of the mount; a path with or without a trailing slash lists the
// same folder. A page holds at most r.Limit names (1,000 when
// it is 0 or less), those after r.Cursor; keel.All walks every page.
// Values are never read: the cost is in proportion to the children
// listed, not to the keys below them.
//
// It needs keel.CapList on mount/path/ (with a trailing slash: "secret/"
// for the top, "secret/app/" for "app"). It fails with keel.KindInvalid for
// a malformed path, keel.KindForbidden without the right, and
// keel.KindNotFound when the folder has no children: a missing folder, or
// a path that holds a secret but nothing below it. A page after the last
// child is empty, not an error.
func (e *Engine) List(ctx context.Context, path string, r keel.ListRequest) (page keel.Page[string], err error) {
	if e.obs == nil {
		return e.list(ctx, path, r)
	}
	ctx, op, err := keel.Begin(ctx, e.obs, e.clock, "kv.List", e.resource(path), r)
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("kv: list %q: %w", path, err)
	}
	if op != nil {
		defer func() { op.End(page, err) }()
	}
	return e.list(ctx, path, r)
}

func (e *Engine) list(ctx context.Context, path string, r keel.ListRequest) (keel.Page[string], error) {
	folder, err := folderOf(path)
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("kv: list: %w", err)
	}
	if err := e.authorize(ctx, keel.CapList, e.resource(folder)); err != nil {
		return keel.Page[string]{}, fmt.Errorf("kv: list %q: %w", folder, err)
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var c collector
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		c.reset()
		// One more than the page, to know whether another follows.
		return storage.Children(tx, folder, r.Cursor, func(name string) error {
			if c.n == limit+1 {
				return storage.StopScan
			}
			return c.add(name)
		})
	})
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("kv: list %q: %w", folder, err)
	}
	if c.n == 0 && r.Cursor == "" {
		return keel.Page[string]{}, fmt.Errorf("kv: nothing to list at %q: %w", folder, keel.KindNotFound)
	}
	names := c.all()
	if len(names) > limit {
		return keel.Page[string]{Items: names[:limit], Next: names[limit-1]}, nil
	}
	return keel.Page[string]{Items: names}, nil
}

// collector gathers names in chunks of fixed size, then copies them once
// into a slice of the exact length: a folder of thousands of names costs
// about half the copying and allocation of appending to one slice, which
// doubles as it grows.
type collector struct {
	full [][]string // chunks of collectChunk names
	last []string
	n    int
}

const collectChunk = 512

func (c *collector) reset() { *c = collector{} }

func (c *collector) add(name string) error {
	if len(c.last) == collectChunk {
		c.full = append(c.full, c.last)
		c.last = nil
	}
	if c.last == nil && len(c.full) > 0 {
		c.last = make([]string, 0, collectChunk)
	}
	c.last = append(c.last, name)
	c.n++
	return nil
}

func (c *collector) all() []string {
	if len(c.full) == 0 {
		return c.last
	}
	out := make([]string, 0, c.n)
	for _, ch := range c.full {
		out = append(out, ch...)
	}
	return append(out, c.last...)
}

// Write stores data at path, replacing every pair stored there before:
// version 1 keeps no history and merges nothing. Values are kept as JSON
// (see the package documentation); data is not retained. A "ttl" key that
// holds a duration is reported by reads as their lease duration; one that
// does not is data like any other, as in Vault, and reads report the
// mount's default.
//
// It needs keel.CapCreate on mount/path when nothing is stored at path, and
// keel.CapUpdate when a secret is; the right is chosen and checked in the
// transaction that writes, so a secret created by someone else meanwhile
// is never overwritten by a caller who may only create. The rights are
// checked before data is: a caller without them learns nothing of its
// request's faults.
//
// It fails with keel.KindInvalid for a malformed path, empty data ("missing
// data fields"), a key that is not valid UTF-8, a value that cannot be
// encoded as JSON; keel.KindForbidden without the right; keel.KindTooLarge
// when the path or the encoded data exceeds the store's limits. On any
// error nothing is written.
func (e *Engine) Write(ctx context.Context, path string, data map[string]any) (err error) {
	if e.obs == nil {
		return e.write(ctx, path, e.resource(path), data)
	}
	resource := e.resource(path)
	ctx, op, err := keel.Begin(ctx, e.obs, e.clock, "kv.Write", resource, writeInput{data})
	if err != nil {
		return fmt.Errorf("kv: write %q: %w", path, err)
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return e.write(ctx, path, resource, data)
}

// writeInput is the Input of a kv.Write an Observer is told of.
type writeInput struct {
	Data map[string]any `keel:"secret"`
}

// write is Write; resource is e.resource(path).
func (e *Engine) write(ctx context.Context, path, resource string, data map[string]any) error {
	if err := checkPath(path); err != nil {
		return fmt.Errorf("kv: write: %w", err)
	}
	// Encode outside the transaction; its verdict is given after the
	// rights are checked.
	value, dataErr := encodeData(data)
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		want := keel.CapCreate
		if found, err := storage.Has(tx, path); err != nil {
			return err
		} else if found {
			want = keel.CapUpdate
		}
		if err := e.authorize(ctx, want, resource); err != nil {
			return err
		}
		if dataErr != nil {
			return dataErr
		}
		return tx.Put(path, value)
	})
	if err != nil {
		return fmt.Errorf("kv: write %q: %w", path, err)
	}
	return nil
}

// Delete removes the secret at path. Deleting a path that holds nothing
// succeeds, as Vault's does; the secrets below path, if it is also a
// folder, stay.
//
// It needs keel.CapDelete on mount/path. It fails with keel.KindInvalid
// for a malformed path and keel.KindForbidden without the right.
func (e *Engine) Delete(ctx context.Context, path string) (err error) {
	if e.obs == nil {
		return e.delete(ctx, path, e.resource(path))
	}
	resource := e.resource(path)
	ctx, op, err := keel.Begin(ctx, e.obs, e.clock, "kv.Delete", resource, nil)
	if err != nil {
		return fmt.Errorf("kv: delete %q: %w", path, err)
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return e.delete(ctx, path, resource)
}

// delete is Delete; resource is e.resource(path).
func (e *Engine) delete(ctx context.Context, path, resource string) error {
	if err := checkPath(path); err != nil {
		return fmt.Errorf("kv: delete: %w", err)
	}
	if err := e.authorize(ctx, keel.CapDelete, resource); err != nil {
		return fmt.Errorf("kv: delete %q: %w", path, err)
	}
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(path)
	})
	if err != nil {
		return fmt.Errorf("kv: delete %q: %w", path, err)
	}
	return nil
}

// resource returns the resource of path in the mount: "secret/app/db", or
// "secret/app/" for the folder "app/".
func (e *Engine) resource(path string) string { return e.mount + "/" + path }

// authorize asks the Authorizer for c on resource. An error that carries
// no kind, breaking the Authorizer contract, still refuses: it is
// returned as keel.KindForbidden.
func (e *Engine) authorize(ctx context.Context, c keel.Capability, resource string) error {
	err := keel.Authorize(ctx, e.authz, c, resource)
	if err != nil && keel.KindOf(err) == keel.KindUnknown {
		return fmt.Errorf("%q on %q refused: %w: %w", c, resource, keel.KindForbidden, err)
	}
	return err
}

// leaseDuration returns the duration of the "ttl" key of data, else of its
// "lease" key (Vault's older name), else the mount default; a value that
// cannot be parsed counts as absent, as in Vault.
func (e *Engine) leaseDuration(data map[string]any) time.Duration {
	raw, ok := data[ttlKey]
	if !ok {
		raw, ok = data[legacyTTLKey]
	}
	if !ok {
		return e.defaultTTL
	}
	d, err := keel.ParseDuration(entryField(ttlKey), raw)
	if err != nil {
		return e.defaultTTL
	}
	return d
}

// The fields of Write's data in errors, as Go paths (see keel.FieldError):
// the argument data is "Data", its entry of key k is Data[k] with k quoted
// as Go quotes it (entryField).
const dataField = "Data"

// entryField is the Go path of the entry k of Write's data: Data["k"].
func entryField(k string) string { return dataField + "[" + strconv.Quote(k) + "]" }

// encodeData returns the JSON encoding of data, or an error of kind
// keel.KindInvalid listing what keeps data from being stored.
func encodeData(data map[string]any) ([]byte, error) {
	if len(data) == 0 {
		return nil, keel.Invalid(dataField, "missing data fields")
	}
	var v keel.Validation
	for k := range data {
		if !utf8.ValidString(k) {
			v.Add(dataField, "key %q is not valid UTF-8", k)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	value, err := jsonobj.AppendObject(nil, data)
	if err != nil {
		// Find the culprits, to name them.
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if _, err := json.Marshal(data[k]); err != nil {
				v.Add(entryField(k), "cannot be encoded as JSON: %v", err)
			}
		}
		if v.Len() == 0 {
			v.Add(dataField, "cannot be encoded as JSON: %v", err)
		}
		return nil, v.Err()
	}
	return value, nil
}

// decodeData decodes a stored secret, numbers as json.Number.
func decodeData(raw []byte) (map[string]any, error) { return jsonobj.Decode(raw) }
