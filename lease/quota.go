package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// quotaKey holds the table of lease-count quotas, with their counts, in one
// record (see quotaTx): every issue and every removal of a lease reads it
// and, when a quota covers the lease, writes it, in the transaction that
// writes the lease.
const quotaKey = "quotas"

// maxQuotas is how many lease-count quotas a Manager's store holds at most.
const maxQuotas = 100

// maxQuotaNameLen bounds the bytes of a quota's name.
const maxQuotaNameLen = 128

// Quota is a lease-count quota: at most MaxLeases leases under Path.
type Quota struct {
	// Name names the quota.
	Name string
	// Path is the part of the lease tree the quota covers, as given to
	// PutQuota: "" every lease; a mount such as "secret/"; or a request
	// path under one, such as "ldap/creds/app", covering the leases
	// issued for that path and for the paths under it ("ldap/creds/app/x"),
	// not "ldap/creds/app2". A trailing "/" or "/*" (Vault's glob)
	// changes nothing.
	Path string
	// MaxLeases is the most leases the quota lets exist at once.
	MaxLeases int
	// Leases is how many leases the quota counts now: those under Path
	// that lie under no more specific quota (the ones it applies to).
	Leases int
	// Counting reports that the quota is still counting the leases that
	// existed when it was set (see PutQuota): it is not applied yet, and
	// Leases is the count so far.
	Counting bool
}

// QuotaRequest creates or replaces a lease-count quota (PutQuota).
type QuotaRequest struct {
	// Name names the quota: 1 to 128 bytes, no "/" and no control
	// character.
	Name string
	// Path is what the quota covers (see Quota.Path): "", or a path with
	// no leading "/", no empty, "." or ".." segment and no control
	// character, with or without a trailing "/" or "/*" (no other glob).
	// No two quotas have the same path.
	Path string
	// MaxLeases is the most leases the quota lets exist at once; it must
	// be positive.
	MaxLeases int
}

// QuotaError is the error of an issue refused by a lease-count quota
// (errors.As finds it in the error of Issuer.Issue, Tx.Issue and
// Issuer.Update). It wraps keel.KindTooLarge.
type QuotaError struct {
	Name      string // the quota's name
	Path      string // the quota's path, as set
	Max       int    // the quota's MaxLeases
	LeasePath string // the request path of the lease refused
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("lease count quota %q exceeded: at most %d leases under %q", e.Name, e.Max, e.Path)
}

// Unwrap returns keel.KindTooLarge.
func (e *QuotaError) Unwrap() error { return keel.KindTooLarge }

// quotaRec is a stored quota. Raw counts the leases under the path whose
// id key is at most Cursor while Counting, every one afterwards.
type quotaRec struct {
	Name     string `json:"n"`
	Path     string `json:"p"`
	Max      int    `json:"m"`
	Raw      int    `json:"c"`
	Counting bool   `json:"k,omitempty"`
	Cursor   string `json:"s,omitempty"`
}

// canon returns the path a quota path stands for: without its trailing
// "/*" (Vault's glob of the paths under a prefix) or "/".
func canon(p string) string {
	return strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/")
}

// covers reports whether the quota path c (canonical) covers the lease
// request path or quota path p.
func covers(c, p string) bool {
	return c == "" || p == c || strings.HasPrefix(p, c+"/")
}

// counts reports whether r counts the lease id now: always once counted,
// and while counting only the leases its scan has passed.
func (r *quotaRec) counts(id string) bool {
	return covers(canon(r.Path), pathOf(id)) && (!r.Counting || idKey(id) <= r.Cursor)
}

// quotaTx is the quota table as one transaction sees it: loaded at its
// first use, written back by flush when it changed.
type quotaTx struct {
	tx     storage.Tx
	loaded bool
	recs   []quotaRec // sorted by name
	dirty  bool
}

func newQuotaTx(tx storage.Tx) *quotaTx { return &quotaTx{tx: tx} }

func (q *quotaTx) load() error {
	if q.loaded {
		return nil
	}
	raw, err := q.tx.Get(quotaKey)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(raw, &q.recs); err != nil {
			return fmt.Errorf("the quota table is corrupt: %w", keel.KindInternal)
		}
	}
	q.loaded = true
	return nil
}

// flush writes the table back if it changed.
func (q *quotaTx) flush() error {
	if !q.dirty {
		return nil
	}
	q.dirty = false
	if len(q.recs) == 0 {
		return q.tx.Delete(quotaKey)
	}
	b, err := json.Marshal(q.recs)
	if err != nil {
		return fmt.Errorf("encoding the quota table: %w", keel.KindInternal)
	}
	return q.tx.Put(quotaKey, b)
}

// applying returns the index of the quota that applies to a lease of
// request path p: the most specific counted quota that covers it; -1 for
// none.
func (q *quotaTx) applying(p string) int {
	best := -1
	for i := range q.recs {
		r := &q.recs[i]
		if r.Counting || !covers(canon(r.Path), p) {
			continue
		}
		if best < 0 || len(canon(r.Path)) > len(canon(q.recs[best].Path)) {
			best = i
		}
	}
	return best
}

// used returns how many leases the quota i applies to: the leases under its
// path less those under the most specific counted quotas below it.
func (q *quotaTx) used(i int) int {
	c := canon(q.recs[i].Path)
	n := q.recs[i].Raw
	for j := range q.recs {
		cj := canon(q.recs[j].Path)
		if j == i || q.recs[j].Counting || cj == c || !covers(c, cj) {
			continue
		}
		if q.applyingAbove(j, c) {
			n -= q.recs[j].Raw
		}
	}
	return max(n, 0)
}

// applyingAbove reports whether no counted quota lies strictly between the
// quota j and the path c above it: j's leases are c's exceptions.
func (q *quotaTx) applyingAbove(j int, c string) bool {
	cj := canon(q.recs[j].Path)
	for k := range q.recs {
		ck := canon(q.recs[k].Path)
		if k == j || q.recs[k].Counting || ck == c || ck == cj {
			continue
		}
		if covers(c, ck) && covers(ck, cj) {
			return false
		}
	}
	return true
}

// admit checks the new lease id against the quota that applies to it and
// counts it in every quota that covers it; it changes nothing and returns
// a *QuotaError when that quota is full.
func (q *quotaTx) admit(id string) error {
	if err := q.load(); err != nil {
		return err
	}
	if len(q.recs) == 0 {
		return nil
	}
	if i := q.applying(pathOf(id)); i >= 0 && q.used(i) >= q.recs[i].Max {
		r := q.recs[i]
		return &QuotaError{Name: r.Name, Path: r.Path, Max: r.Max, LeasePath: pathOf(id)}
	}
	for i := range q.recs {
		if q.recs[i].counts(id) {
			q.recs[i].Raw++
			q.dirty = true
		}
	}
	return nil
}

// removed uncounts the lease id, which the transaction removes, from every
// quota that counts it.
func (q *quotaTx) removed(id string) error {
	if err := q.load(); err != nil {
		return err
	}
	for i := range q.recs {
		if q.recs[i].counts(id) && q.recs[i].Raw > 0 {
			q.recs[i].Raw--
			q.dirty = true
		}
	}
	return nil
}

func (q *quotaTx) find(name string) int {
	for i := range q.recs {
		if q.recs[i].Name == name {
			return i
		}
	}
	return -1
}

func (q *quotaTx) quota(i int) Quota {
	r := q.recs[i]
	n := r.Raw
	if !r.Counting {
		n = q.used(i)
	}
	return Quota{Name: r.Name, Path: r.Path, MaxLeases: r.Max, Leases: n, Counting: r.Counting}
}

// checkQuotaName returns why name is not a valid quota name, or "".
func checkQuotaName(name string) string {
	switch {
	case name == "":
		return "is required"
	case len(name) > maxQuotaNameLen:
		return fmt.Sprintf("is longer than %d bytes", maxQuotaNameLen)
	case strings.Contains(name, "/"):
		return "must not contain \"/\""
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "must not contain control characters"
		}
	}
	return ""
}

// PutQuota creates the lease-count quota req.Name, or replaces it, and
// returns it. It needs keel.CapUpdate on "sys/quotas/lease-count/"+name.
//
// A new quota, or one whose path changes, counts the leases that exist
// under its path before it applies: PutQuota scans them in batches of
// Limits().Batch leases, one transaction per batch, and returns once the
// count is complete. The count stays exact while leases come and go
// meanwhile: the quota remembers the last lease id its scan has counted,
// and an issue or a removal counts (or uncounts) a lease in the quota only
// when the scan has passed its id, in the transaction that writes the
// lease; the scan counts the rest. Until the count is complete the quota
// does not apply (Quota.Counting), and when PutQuota is interrupted the
// quota stays so until PutQuota is called again for it. A quota whose
// path does not change keeps its count (a new MaxLeases applies at once,
// even below the count: the leases stay, and no new one is issued under
// the quota until enough are gone).
//
// PutQuota fails with an error of kind keel.KindInvalid naming the
// fields of a malformed request (a bad name or path, MaxLeases not
// positive, a path another quota has); with keel.KindTooLarge when the
// store holds 100 quotas already.
func (m *Manager) PutQuota(ctx context.Context, req QuotaRequest) (Quota, error) {
	if err := m.authorize(ctx, "put quota", keel.CapUpdate, "sys/quotas/lease-count/"+req.Name); err != nil {
		return Quota{}, err
	}
	var v keel.Validation
	if why := checkQuotaName(req.Name); why != "" {
		v.Add("Name", "%s", why)
	}
	switch c := canon(req.Path); {
	case req.Path == "":
	case strings.Contains(c, "*") || strings.HasSuffix(req.Path, "*") && !strings.HasSuffix(req.Path, "/*"):
		v.Add("Path", "may hold a glob only as its whole last segment (\"secret/app/*\")")
	default:
		if why := checkPath(c); why != "" {
			v.Add("Path", "%s", why)
		}
	}
	if req.MaxLeases <= 0 {
		v.Add("MaxLeases", "must be positive")
	}
	if err := v.Err(); err != nil {
		return Quota{}, fmt.Errorf("lease: put quota: %w", err)
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		if err := q.load(); err != nil {
			return err
		}
		for _, r := range q.recs {
			if r.Name != req.Name && canon(r.Path) == canon(req.Path) {
				return keel.Invalid("Path", "%q is the path of the quota %q", req.Path, r.Name)
			}
		}
		i := q.find(req.Name)
		switch {
		case i >= 0 && canon(q.recs[i].Path) == canon(req.Path):
			q.recs[i].Max = req.MaxLeases
			q.recs[i].Path = req.Path
		case i >= 0:
			q.recs[i] = quotaRec{Name: req.Name, Path: req.Path, Max: req.MaxLeases, Counting: true}
		case len(q.recs) >= maxQuotas:
			return fmt.Errorf("%d quotas are stored, at most %d (maxQuotas): %w", len(q.recs), maxQuotas, keel.KindTooLarge)
		default:
			q.recs = append(q.recs, quotaRec{Name: req.Name, Path: req.Path, Max: req.MaxLeases, Counting: true})
			slices.SortFunc(q.recs, func(a, b quotaRec) int { return strings.Compare(a.Name, b.Name) })
		}
		q.dirty = true
		return q.flush()
	})
	if err != nil {
		return Quota{}, fmt.Errorf("lease: put quota %q: %w", req.Name, err)
	}
	if err := m.countQuota(ctx, req.Name, canon(req.Path)); err != nil {
		return Quota{}, fmt.Errorf("lease: put quota %q: counting its leases: %w", req.Name, err)
	}
	return m.GetQuota(ctx, req.Name)
}

// countQuota finishes the count of the quota name at path c, a batch of
// leases per transaction, unless another PutQuota or DeleteQuota has
// replaced it meanwhile.
func (m *Manager) countQuota(ctx context.Context, name, c string) error {
	prefix := idPrefix
	if c != "" {
		prefix = idKey(c + "/")
	}
	for done := false; !done; {
		err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			done = true
			q := newQuotaTx(tx)
			if err := q.load(); err != nil {
				return err
			}
			i := q.find(name)
			if i < 0 || canon(q.recs[i].Path) != c || !q.recs[i].Counting {
				return nil // counted, replaced or deleted
			}
			r := &q.recs[i]
			n := 0
			err := tx.Scan(prefix, storage.ScanOptions{After: r.Cursor, KeysOnly: true}, func(key string, _ []byte) error {
				n++
				r.Raw++
				r.Cursor = key
				if n == m.batch {
					return storage.StopScan
				}
				return nil
			})
			if err != nil {
				return err
			}
			if n < m.batch {
				r.Counting, r.Cursor = false, ""
			} else {
				done = false
			}
			q.dirty = true
			return q.flush()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// GetQuota returns the lease-count quota name. It needs keel.CapRead on
// "sys/quotas/lease-count/"+name, and fails with keel.KindNotFound when
// there is no such quota.
func (m *Manager) GetQuota(ctx context.Context, name string) (Quota, error) {
	if err := m.authorize(ctx, "get quota", keel.CapRead, "sys/quotas/lease-count/"+name); err != nil {
		return Quota{}, err
	}
	if name == "" {
		return Quota{}, fmt.Errorf("lease: get quota: %w", keel.Invalid("Name", "is required"))
	}
	var out Quota
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		if err := q.load(); err != nil {
			return err
		}
		i := q.find(name)
		if i < 0 {
			return fmt.Errorf("quota %q: %w", name, keel.KindNotFound)
		}
		out = q.quota(i)
		return nil
	})
	if err != nil {
		return Quota{}, fmt.Errorf("lease: get quota: %w", err)
	}
	return out, nil
}

// ListQuotas returns every lease-count quota, by name (100 at most).
// It needs keel.CapList on "sys/quotas/lease-count".
func (m *Manager) ListQuotas(ctx context.Context) ([]Quota, error) {
	if err := m.authorize(ctx, "list quotas", keel.CapList, "sys/quotas/lease-count"); err != nil {
		return nil, err
	}
	var out []Quota
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		if err := q.load(); err != nil {
			return err
		}
		out = out[:0]
		for i := range q.recs {
			out = append(out, q.quota(i))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lease: list quotas: %w", err)
	}
	return out, nil
}

// DeleteQuota removes the lease-count quota name; the leases stay. It needs
// keel.CapDelete on "sys/quotas/lease-count/"+name, and fails with
// keel.KindNotFound when there is no such quota.
func (m *Manager) DeleteQuota(ctx context.Context, name string) error {
	if err := m.authorize(ctx, "delete quota", keel.CapDelete, "sys/quotas/lease-count/"+name); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("lease: delete quota: %w", keel.Invalid("Name", "is required"))
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		if err := q.load(); err != nil {
			return err
		}
		i := q.find(name)
		if i < 0 {
			return fmt.Errorf("quota %q: %w", name, keel.KindNotFound)
		}
		q.recs = slices.Delete(q.recs, i, i+1)
		q.dirty = true
		return q.flush()
	})
	if err != nil {
		return fmt.Errorf("lease: delete quota: %w", err)
	}
	return nil
}

// CheckQuota fails with the error Issue would give, a *QuotaError, when the
// lease-count quota that applies to a lease of the request path is full
// now, and returns nil otherwise (for a path outside the Issuer's mount
// too: Issue refuses it). An engine that creates a secret outside the
// store (a directory account) asks before creating it, so that a full
// quota refuses the request without touching the backend; the check is
// advisory, as the quota may fill meanwhile, and Issue, which counts
// exactly, still decides.
func (i *Issuer) CheckQuota(ctx context.Context, path string) error {
	if !i.under(path) {
		return nil
	}
	err := i.m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		if err := q.load(); err != nil {
			return err
		}
		if j := q.applying(path); j >= 0 && q.used(j) >= q.recs[j].Max {
			r := q.recs[j]
			return &QuotaError{Name: r.Name, Path: r.Path, Max: r.Max, LeasePath: path}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lease: issue for %q: %w", path, err)
	}
	return nil
}
