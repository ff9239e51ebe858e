package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/storage"
)

// IssueRequest asks for a lease on a secret an engine has just created.
type IssueRequest struct {
	// Path is the request path, such as "ldap/creds/app". It must lie
	// under a registered mount (be longer than the mount, which it
	// starts with), and have no leading or trailing "/", no empty, "."
	// or ".." segment and no control character.
	Path string
	// TTL is the engine's TTL; 0: the mount's default TTL. It is capped
	// at the effective max TTL.
	TTL time.Duration
	// MaxTTL is the engine's max TTL; 0: the mount's max TTL. It can
	// lower the mount's max TTL, never raise it.
	MaxTTL time.Duration
	// Renewable allows Renew.
	Renewable bool
	// Token marks the lease of a token: Renew refuses it (tokens are
	// renewed through the token endpoint).
	Token bool
	// Data is the engine's private data, given back to its Revoker and
	// Renewer (the DNs to delete, say). The manager keeps a copy.
	Data []byte `keel:"secret"`
}

// idRandLen is the number of base62 characters of a lease id after its
// path.
const idRandLen = 24

// idTimeLen is how many of them tell the issue time: its milliseconds
// since the Unix epoch, base62, most significant first (up to the year
// 2080). The ids of one path then sort by issue time, so that the leases
// a commit writes together, and that expire together, lie side by side
// in an ordered store's pages rather than one page each: on bbolt a
// scattered page costs the kernel several times a contiguous one to
// write. The other 17 characters are random (101 bits), which keeps ids
// unique and unguessable.
const idTimeLen = 7

// newID returns a new lease id for path, issued at now.
func newID(path string, now time.Time) string { return newIDKey(path, now)[len(idPrefix):] }

// newIDKey returns the record key (idKey) of a new lease id for path,
// issued at now: the id is the key without its prefix, built once.
func newIDKey(path string, now time.Time) string {
	b := make([]byte, 0, len(idPrefix)+len(path)+1+idRandLen)
	b = append(append(append(b, idPrefix...), path...), '/')
	ms := max(now.UnixMilli(), 0)
	var t [idTimeLen]byte
	for i := idTimeLen - 1; i >= 0; i-- {
		t[i] = randid.Base62[ms%62]
		ms /= 62
	}
	if ms > 0 { // past 2080: the largest time
		for i := range t {
			t[i] = randid.Base62[61]
		}
	}
	b = append(b, t[:]...)
	return string(randid.Append(b, randid.Base62, idRandLen-idTimeLen))
}

// issue stores a new lease for req in a transaction of its own and wakes
// the worker, unless the worker already sleeps until a time no later than
// the lease's expiry (see Issuer.Issue).
func (m *Manager) issue(ctx context.Context, req IssueRequest) (Lease, error) {
	return m.issueUnder(ctx, req, nil)
}

// issueUnder is issue; mount, when not nil, is the registered mount of
// req.Path, which newEntry then does not look up.
func (m *Manager) issueUnder(ctx context.Context, req IssueRequest, mount *mountHit) (Lease, error) {
	e, key, err := m.newEntry(req, mount)
	if err != nil {
		return Lease{}, err
	}
	err = m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return putNew(tx, key, &e)
	})
	if err != nil {
		return Lease{}, fmt.Errorf("lease: issue for %q: %w", req.Path, err)
	}
	m.wakeFor(e.NextAttempt)
	return e.Lease, nil
}

// mountHit is a registered mount: its path and entry.
type mountHit struct {
	name string
	mt   mountEntry
}

// newEntry checks req and returns the lease to store, with a new id, and
// the key of its record. mount, when not nil, is the registered mount of
// req.Path (the Issuer's, which it has just read); nil: looked up.
func (m *Manager) newEntry(req IssueRequest, mount *mountHit) (entry, string, error) {
	var v keel.Validation
	if why := checkPath(req.Path); why != "" {
		v.Add("Path", "%s", why)
	}
	if req.TTL < 0 {
		v.Add("TTL", "must not be negative")
	}
	if req.MaxTTL < 0 {
		v.Add("MaxTTL", "must not be negative")
	}
	var name string
	var mt mountEntry
	switch {
	case v.Len() > 0:
	case mount != nil:
		name, mt = mount.name, mount.mt
	default:
		var ok bool
		if name, mt, ok = m.mountFor(req.Path); !ok {
			v.Add("Path", "%q lies under no registered mount", req.Path)
		}
	}
	if err := v.Err(); err != nil {
		return entry{}, "", fmt.Errorf("lease: issue: %w", err)
	}
	maxTTL := mt.cfg.MaxTTL
	if req.MaxTTL > 0 {
		maxTTL = min(maxTTL, req.MaxTTL)
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = mt.cfg.DefaultTTL
	}
	ttl = min(ttl, maxTTL)
	now := m.now()
	key := newIDKey(req.Path, now)
	e := entry{
		Lease: Lease{
			ID:          key[len(idPrefix):],
			Path:        req.Path,
			Mount:       name,
			IssueTime:   now,
			ExpireTime:  now.Add(ttl),
			MaxTTL:      maxTTL,
			Renewable:   req.Renewable,
			Token:       req.Token,
			NextAttempt: now.Add(ttl),
		},
		IssuedTTL: ttl,
	}
	if len(req.Data) > 0 {
		e.Data = append([]byte(nil), req.Data...)
	}
	return e, key, nil
}

// putNew writes the new lease e, whose record key is key, through tx,
// counted by the quotas that cover it, unless the quota that applies to it
// is full: then it writes nothing and returns a *QuotaError.
func putNew(tx storage.Tx, key string, e *entry) error {
	q := newQuotaTx(tx)
	if err := q.admit(e.ID); err != nil {
		return err
	}
	if err := putEntryAt(tx, key, nil, e); err != nil {
		return err
	}
	return q.flush()
}

// putEntry writes e (with its ID) and its index entries through tx, moving
// them from where old had them; old is nil for a new lease.
func putEntry(tx storage.Tx, old, e *entry) error { return putEntryAt(tx, idKey(e.ID), old, e) }

// putEntryAt is putEntry for a caller that has built the key of e's
// record.
func putEntryAt(tx storage.Tx, key string, old, e *entry) error {
	id := e.ID
	if old != nil && !old.NextAttempt.Equal(e.NextAttempt) {
		if err := tx.Delete(dueKey(old.NextAttempt, id)); err != nil {
			return err
		}
	}
	if err := tx.Put(dueKey(e.NextAttempt, id), emptyValue); err != nil {
		return err
	}
	switch {
	case e.Irrevocable:
		if err := tx.Put(irrKey(id), encodeIrr(e.Mount, e.LastError)); err != nil {
			return err
		}
	case old != nil && old.Irrevocable:
		if err := tx.Delete(irrKey(id)); err != nil {
			return err
		}
	}
	return tx.Put(key, encodeEntry(e))
}

// deleteEntry removes e, whose record key is key, and its index entries
// through tx; skip, when not empty, is an expiry-index key the caller
// deletes itself.
func deleteEntry(tx storage.Tx, key string, e *entry, skip string) error {
	if err := tx.Delete(key); err != nil {
		return err
	}
	if !isDueKey(skip, e.NextAttempt, e.ID) {
		if err := tx.Delete(dueKey(e.NextAttempt, e.ID)); err != nil {
			return err
		}
	}
	if e.Irrevocable {
		return tx.Delete(irrKey(e.ID))
	}
	return nil
}
