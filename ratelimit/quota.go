package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// quotasKey holds every quota, sorted by name, in one record: the Limiter
// watches it and reloads it whole.
const quotasKey = "quotas"

// maxQuotas is how many quotas a store holds at most.
const maxQuotas = 100

// maxRate bounds Quota.Rate.
const maxRate = 1e9

// Quota is a rate-limit quota.
type Quota struct {
	// Name names the quota: 1 to 128 bytes, no "/" and no control
	// character.
	Name string
	// Path is what the quota covers: "" every request; a mount such as
	// "secret/"; or a request path, such as "secret/app", covering that
	// path and the paths under it ("secret/app/db"), not "secret/app2".
	// A trailing "/" or "/*" (Vault's glob) changes nothing. It has no
	// leading "/", no empty, "." or ".." segment, no control character
	// and no other glob. No two quotas have the same path.
	Path string
	// Rate is how many requests a client may make per Interval: positive,
	// at most 1e9, rounded to the nearest whole number (at least 1).
	Rate float64
	// Interval is the window the Rate counts in. Zero: one second (Put
	// returns the quota with it); it must not be negative.
	Interval time.Duration
	// BlockInterval, when positive, is how long a client that went beyond
	// the Rate is refused every request. Zero: none; it must not be
	// negative.
	BlockInterval time.Duration
}

// limit is how many requests a window allows.
func (q *Quota) limit() int64 { return max(1, int64(math.Round(q.Rate))) }

// record is a stored quota.
type record struct {
	Name  string  `json:"n"`
	Path  string  `json:"p"`
	Rate  float64 `json:"r"`
	Every int64   `json:"i"`           // Interval, ns
	Block int64   `json:"b,omitempty"` // BlockInterval, ns
}

func (r record) quota() Quota {
	return Quota{Name: r.Name, Path: r.Path, Rate: r.Rate, Interval: time.Duration(r.Every), BlockInterval: time.Duration(r.Block)}
}

// canon returns the path a quota or request path stands for: without a
// trailing "/*" or "/".
func canon(p string) string {
	return strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/")
}

// checkName returns why name is not a valid quota name, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "is required"
	case len(name) > 128:
		return "is longer than 128 bytes"
	case strings.Contains(name, "/"):
		return "must not contain \"/\""
	case hasControl(name):
		return "must not contain control characters"
	}
	return ""
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// checkPath returns why p is not a valid quota path, or "".
func checkPath(p string) string {
	if p == "" {
		return ""
	}
	c := canon(p)
	switch {
	case strings.Contains(c, "*") || strings.HasSuffix(p, "*") && !strings.HasSuffix(p, "/*"):
		return "may hold a glob only as its whole last segment (\"secret/app/*\")"
	case strings.HasPrefix(p, "/"):
		return "must not start with \"/\""
	case hasControl(p):
		return "must not contain control characters"
	}
	for seg := range strings.SplitSeq(c, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "must not have an empty, \".\" or \"..\" segment"
		}
	}
	return ""
}

// validate returns q with its defaults, or every broken rule.
func validate(q Quota) (Quota, error) {
	var v keel.Validation
	if why := checkName(q.Name); why != "" {
		v.Add("Name", "%s", why)
	}
	if why := checkPath(q.Path); why != "" {
		v.Add("Path", "%s", why)
	}
	switch {
	case math.IsNaN(q.Rate) || q.Rate <= 0:
		v.Add("Rate", "must be positive")
	case q.Rate > maxRate:
		v.Add("Rate", "must be at most 1e9")
	}
	if q.Interval < 0 {
		v.Add("Interval", "must not be negative")
	}
	if q.Interval == 0 {
		q.Interval = time.Second
	}
	if q.BlockInterval < 0 {
		v.Add("BlockInterval", "must not be negative")
	}
	return q, v.Err()
}

// load reads the stored quotas, sorted by name.
func load(tx storage.Tx) ([]record, error) {
	raw, err := tx.Get(quotasKey)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var recs []record
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, fmt.Errorf("the quota record is corrupt: %w", keel.KindInternal)
	}
	return recs, nil
}

func find(recs []record, name string) int {
	for i := range recs {
		if recs[i].Name == name {
			return i
		}
	}
	return -1
}

// Put creates the quota q.Name, or replaces it as a whole, and returns it
// as stored (with its default Interval). It needs keel.CapUpdate on
// "sys/quotas/rate-limit/"+q.Name. The quota applies to the next request
// Allow checks in this process, and soon after in the others on the same
// store; a quota replaced by another starts its clients' counts anew.
//
// Put fails with an error of kind keel.KindInvalid naming the fields of a
// malformed quota (see Quota; a path another quota has is a Path
// error), and with keel.KindTooLarge when the store holds 100 quotas
// already.
func (l *Limiter) Put(ctx context.Context, q Quota) (_ Quota, err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, l.auth, keel.CapUpdate, "sys/quotas/rate-limit/"+q.Name); err != nil {
		return Quota{}, err
	}
	q, err = validate(q)
	if err != nil {
		return Quota{}, err
	}
	if err := l.open(); err != nil {
		return Quota{}, err
	}
	rec := record{Name: q.Name, Path: q.Path, Rate: q.Rate, Every: int64(q.Interval), Block: int64(q.BlockInterval)}
	err = l.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		recs, err := load(tx)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Name != q.Name && canon(r.Path) == canon(q.Path) {
				return keel.Invalid("Path", "%q is the path of the quota %q", q.Path, r.Name)
			}
		}
		switch i := find(recs, q.Name); {
		case i >= 0:
			recs[i] = rec
		case len(recs) >= maxQuotas:
			return fmt.Errorf("%d quotas are stored, at most %d: %w", len(recs), maxQuotas, keel.KindTooLarge)
		default:
			recs = append(recs, rec)
			slices.SortFunc(recs, func(a, b record) int { return strings.Compare(a.Name, b.Name) })
		}
		return save(tx, recs)
	})
	if err != nil {
		return Quota{}, err
	}
	l.applyNow(ctx)
	return q, nil
}

func save(tx storage.Tx, recs []record) error {
	if len(recs) == 0 {
		return tx.Delete(quotasKey)
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return fmt.Errorf("encoding the quotas: %w", keel.KindInternal)
	}
	return tx.Put(quotasKey, b)
}

// Get returns the quota name, as stored. It needs keel.CapRead on
// "sys/quotas/rate-limit/"+name, and fails with keel.KindNotFound when
// there is no such quota.
func (l *Limiter) Get(ctx context.Context, name string) (_ Quota, err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, l.auth, keel.CapRead, "sys/quotas/rate-limit/"+name); err != nil {
		return Quota{}, err
	}
	if name == "" {
		return Quota{}, keel.Invalid("Name", "is required")
	}
	if err := l.open(); err != nil {
		return Quota{}, err
	}
	var out Quota
	err = l.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		recs, err := load(tx)
		if err != nil {
			return err
		}
		i := find(recs, name)
		if i < 0 {
			return fmt.Errorf("quota %q: %w", name, keel.KindNotFound)
		}
		out = recs[i].quota()
		return nil
	})
	return out, err
}

// List returns every quota, by name (100 at most). It needs keel.CapList
// on "sys/quotas/rate-limit".
func (l *Limiter) List(ctx context.Context) (_ []Quota, err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, l.auth, keel.CapList, "sys/quotas/rate-limit"); err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	var out []Quota
	err = l.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		recs, err := load(tx)
		out = out[:0]
		for _, r := range recs {
			out = append(out, r.quota())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes the quota name; it applies no more to the next request
// Allow checks here, and soon after in the other processes. It needs
// keel.CapDelete on "sys/quotas/rate-limit/"+name, and fails with
// keel.KindNotFound when there is no such quota.
func (l *Limiter) Delete(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, l.auth, keel.CapDelete, "sys/quotas/rate-limit/"+name); err != nil {
		return err
	}
	if name == "" {
		return keel.Invalid("Name", "is required")
	}
	if err := l.open(); err != nil {
		return err
	}
	err = l.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		recs, err := load(tx)
		if err != nil {
			return err
		}
		i := find(recs, name)
		if i < 0 {
			return fmt.Errorf("quota %q: %w", name, keel.KindNotFound)
		}
		return save(tx, slices.Delete(recs, i, i+1))
	})
	if err != nil {
		return err
	}
	l.applyNow(ctx)
	return nil
}
