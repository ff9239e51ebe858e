// Package fakedir is the in-memory directory behind the test fakes of
// package ldapengine (ldapengine/ldaptest.Directory, and the one of
// ldapengine's own tests): a flat set of entries with attributes and a
// clear-text password. It does not import ldapengine, so that ldapengine's
// in-package tests can use it; the fakes adapt its methods to
// ldapengine.Directory. A Directory is safe for concurrent use.
package fakedir

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/ldifparse"
)

// ErrNotSent marks the error of a change that was certainly not made: the
// bind before it failed, or the change was refused. The fakes wrap such
// errors with ldapengine.ErrNotApplied. A change that fails without it
// (FailSetPassword, FailApply, LoseReplies) may have been made.
var ErrNotSent = errors.New("fake directory: the change was not made")

// Directory is an in-memory directory: a flat set of entries with
// attributes and a clear-text password. The zero value is not usable:
// create one with New. A Directory is safe for concurrent use.
type Directory struct {
	mu      sync.Mutex
	entries map[string]*fakeEntry // by lower-cased DN
	down    bool
	fail    map[string]error // SetPassword of a DN fails with the error
	lose    map[string]bool  // SetPassword of a DN is made, its reply lost
	failAp  map[string]error // a change of Apply on a DN fails with the error
	changes int
	applied int
	latency atomic.Int64 // of each password change, in nanoseconds
}

type fakeEntry struct {
	dn       string
	attrs    map[string][]string // lower-cased names
	password string
}

// New returns an empty Directory.
func New() *Directory {
	return &Directory{entries: map[string]*fakeEntry{}, fail: map[string]error{}, lose: map[string]bool{}, failAp: map[string]error{}}
}

// Add creates or replaces the entry dn with password and attributes given
// as name, value pairs.
func (f *Directory) Add(dn, password string, attrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &fakeEntry{dn: dn, attrs: map[string][]string{}, password: password}
	for i := 0; i+1 < len(attrs); i += 2 {
		k := strings.ToLower(attrs[i])
		e.attrs[k] = append(e.attrs[k], attrs[i+1])
	}
	f.entries[strings.ToLower(dn)] = e
}

// Password returns the password of the entry dn, and whether it exists.
func (f *Directory) Password(dn string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok {
		return "", false
	}
	return e.password, true
}

// SetDown makes every later call fail as if no server answered (down
// true), or lets them through again.
func (f *Directory) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// FailSetPassword makes SetPassword of dn fail with err (nil: succeed
// again). The error is wrapped with keel.KindUnavailable.
func (f *Directory) FailSetPassword(dn string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, strings.ToLower(dn))
		return
	}
	f.fail[strings.ToLower(dn)] = err
}

// SetLatency makes every later password change take d more, spent
// outside the directory's lock as a server's round trip would be, so that
// changes of different entries overlap.
func (f *Directory) SetLatency(d time.Duration) { f.latency.Store(int64(d)) }

// LoseReplies makes SetPassword of dn change the password and then fail
// as if its reply were lost (lose true): the error is of kind
// keel.KindUnavailable, without ErrNotSent. LoseReplies(dn, false) ends it.
func (f *Directory) LoseReplies(dn string, lose bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lose {
		f.lose[strings.ToLower(dn)] = true
	} else {
		delete(f.lose, strings.ToLower(dn))
	}
}

// Changes returns how many passwords SetPassword has changed.
func (f *Directory) Changes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}

// DNs returns the DNs of the entries, sorted.
func (f *Directory) DNs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.entries {
		out = append(out, e.dn)
	}
	slices.Sort(out)
	return out
}

func (f *Directory) bindLocked(dn, password string) error {
	if f.down {
		return fmt.Errorf("fake directory: no server answers: %w", keel.KindUnavailable)
	}
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok || password == "" || e.password != password {
		return fmt.Errorf("fake directory: bind as %q refused: %w", dn, keel.KindUnauthenticated)
	}
	return nil
}

// manageLocked binds as the managing account of a change or search: as
// bindLocked, except that a refused bind is of kind keel.KindConflict (the
// configuration is wrong, not the caller), and that every error wraps
// ErrNotSent.
func (f *Directory) manageLocked(bindDN, bindPass string) error {
	err := f.bindLocked(bindDN, bindPass)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keel.KindUnauthenticated):
		return fmt.Errorf("fake directory: the configured bind account %q is refused: %w: %w", bindDN, keel.KindConflict, ErrNotSent)
	}
	return fmt.Errorf("%w: %w", err, ErrNotSent)
}

// Bind checks that dn binds with password: the entry exists and password
// is its password, not empty. A refused bind is of kind
// keel.KindUnauthenticated; SetDown(true) makes it keel.KindUnavailable.
func (f *Directory) Bind(dn, password string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bindLocked(dn, password)
}

// FindDN binds as bindDN with bindPass, then returns the DN of the one
// entry under base whose attribute attr equals value (without regard to
// case); none is of kind keel.KindNotFound, several of kind
// keel.KindConflict.
func (f *Directory) FindDN(bindDN, bindPass, base, attr, value string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.manageLocked(bindDN, bindPass); err != nil {
		return "", err
	}
	var found []string
	suffix := "," + strings.ToLower(base)
	for _, k := range slices.Sorted(maps.Keys(f.entries)) {
		e := f.entries[k]
		if base != "" && !strings.HasSuffix(k, suffix) {
			continue
		}
		if slices.ContainsFunc(e.attrs[strings.ToLower(attr)], func(v string) bool { return strings.EqualFold(v, value) }) {
			found = append(found, e.dn)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("fake directory: no entry under %q with %s=%q: %w", base, attr, value, keel.KindNotFound)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("fake directory: several entries under %q with %s=%q: %w", base, attr, value, keel.KindConflict)
}

// EntryExists binds as bindDN with bindPass, then reports whether the
// entry dn exists: nil, or an error of kind keel.KindNotFound.
func (f *Directory) EntryExists(bindDN, bindPass, dn string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.manageLocked(bindDN, bindPass); err != nil {
		return err
	}
	if _, ok := f.entries[strings.ToLower(dn)]; !ok {
		return fmt.Errorf("fake directory: no entry %q: %w", dn, keel.KindNotFound)
	}
	return nil
}

// SetPassword binds as bindDN with bindPass, then sets the password of
// the entry dn; a missing entry is of kind keel.KindNotFound.
func (f *Directory) SetPassword(bindDN, bindPass, dn, password string) error {
	if d := f.latency.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.manageLocked(bindDN, bindPass); err != nil {
		return err
	}
	if err := f.fail[strings.ToLower(dn)]; err != nil {
		return fmt.Errorf("fake directory: password change of %q: %v: %w", dn, err, keel.KindUnavailable)
	}
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok {
		return fmt.Errorf("fake directory: entry %q: %w: %w", dn, keel.KindNotFound, ErrNotSent)
	}
	e.password = password
	f.changes++
	if f.lose[strings.ToLower(dn)] {
		return fmt.Errorf("fake directory: password change of %q: reply lost: %w", dn, keel.KindUnavailable)
	}
	return nil
}

// FailApply makes every change of Apply on the entry dn fail with err
// (nil: succeed again). The error is wrapped with keel.KindUnavailable.
func (f *Directory) FailApply(dn string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failAp, strings.ToLower(dn))
		return
	}
	f.failAp[strings.ToLower(dn)] = err
}

// Attr returns the values of the attribute name of the entry dn (nil when
// it has none), and whether the entry exists.
func (f *Directory) Attr(dn, name string) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok {
		return nil, false
	}
	return slices.Clone(e.attrs[strings.ToLower(name)]), true
}

// Applied returns how many changes Apply has made.
func (f *Directory) Applied() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Failure is the failure of one change of Apply.
type Failure struct {
	Index int   // the change's position in the list given to Apply, from 0
	Err   error // of kind keel.KindNotFound, keel.KindAlreadyExists, …
}

// Apply binds as bindDN with bindPass (a failure is err), then runs
// changes in order, all under one lock: with keepGoing false it stops at
// the first change that fails, with keepGoing true it runs every change.
// failed lists the changes that failed, in order. An add or modify that
// sets userPassword sets the password Bind accepts (its first value, in
// clear); entries need no parent and attribute values are compared without
// regard to case.
func (f *Directory) Apply(bindDN, bindPass string, changes []ldifparse.Change, keepGoing bool) (failed []Failure, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.manageLocked(bindDN, bindPass); err != nil {
		return nil, err
	}
	for i, ch := range changes {
		if err := f.applyLocked(ch); err != nil {
			failed = append(failed, Failure{Index: i, Err: err})
			if !keepGoing {
				break
			}
			continue
		}
		f.applied++
	}
	return failed, nil
}

func (f *Directory) applyLocked(ch ldifparse.Change) error {
	key := strings.ToLower(ch.DN)
	if err := f.failAp[key]; err != nil {
		return fmt.Errorf("fake directory: %s %q: %v: %w", ch.Type, ch.DN, err, keel.KindUnavailable)
	}
	cur, exists := f.entries[key]
	switch ch.Type {
	case ldifparse.ChangeAdd:
		if exists {
			return fmt.Errorf("fake directory: entry %q exists: %w: %w", ch.DN, keel.KindAlreadyExists, ErrNotSent)
		}
		e := &fakeEntry{dn: ch.DN, attrs: map[string][]string{}}
		for _, a := range ch.Attributes {
			k := strings.ToLower(a.Name)
			e.attrs[k] = append(e.attrs[k], a.Values...)
		}
		e.syncPassword()
		f.entries[key] = e
	case ldifparse.ChangeDelete:
		if !exists {
			return fmt.Errorf("fake directory: entry %q: %w: %w", ch.DN, keel.KindNotFound, ErrNotSent)
		}
		delete(f.entries, key)
	case ldifparse.ChangeModify:
		if !exists {
			return fmt.Errorf("fake directory: entry %q: %w: %w", ch.DN, keel.KindNotFound, ErrNotSent)
		}
		attrs := maps.Clone(cur.attrs)
		pwTouched := false
		for _, m := range ch.Modifications {
			k := strings.ToLower(m.Name)
			pwTouched = pwTouched || k == "userpassword"
			vals := slices.Clone(attrs[k])
			has := func(v string) bool {
				return slices.ContainsFunc(vals, func(x string) bool { return strings.EqualFold(x, v) })
			}
			switch m.Op {
			case ldifparse.ModAdd:
				for _, v := range m.Values {
					if has(v) {
						return fmt.Errorf("fake directory: %q already has %s %q: %w: %w", ch.DN, m.Name, v, keel.KindAlreadyExists, ErrNotSent)
					}
					vals = append(vals, v)
				}
			case ldifparse.ModDelete:
				if len(vals) == 0 {
					return fmt.Errorf("fake directory: %q has no %s: %w: %w", ch.DN, m.Name, keel.KindNotFound, ErrNotSent)
				}
				if len(m.Values) == 0 {
					vals = nil
				}
				for _, v := range m.Values {
					if !has(v) {
						return fmt.Errorf("fake directory: %q has no %s %q: %w: %w", ch.DN, m.Name, v, keel.KindNotFound, ErrNotSent)
					}
					vals = slices.DeleteFunc(vals, func(x string) bool { return strings.EqualFold(x, v) })
				}
			case ldifparse.ModReplace:
				vals = slices.Clone(m.Values)
			default:
				return fmt.Errorf("fake directory: modify operation %q: %w", m.Op, keel.KindInvalid)
			}
			if len(vals) == 0 {
				delete(attrs, k)
			} else {
				attrs[k] = vals
			}
		}
		cur.attrs = attrs
		if pwTouched {
			cur.syncPassword()
		}
	default:
		return fmt.Errorf("fake directory: change type %q: %w", ch.Type, keel.KindInvalid)
	}
	return nil
}

// syncPassword makes the password Bind accepts that of userPassword.
func (e *fakeEntry) syncPassword() {
	if pw := e.attrs["userpassword"]; len(pw) > 0 {
		e.password = pw[0]
	} else {
		e.password = ""
	}
}
