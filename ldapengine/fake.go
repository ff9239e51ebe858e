package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/keelhq/keel"
)

// FakeDirectory is an in-memory Directory for tests and examples: a flat
// set of entries with attributes and a clear-text password. It ignores the
// URLs, TLS and schema of a Conn, except that a URL listed in Down cannot
// be reached. The zero value is not usable: create one with
// NewFakeDirectory. A FakeDirectory is safe for concurrent use.
type FakeDirectory struct {
	mu      sync.Mutex
	entries map[string]*fakeEntry // by lower-cased DN
	down    bool
	fail    map[string]error // SetPassword of a DN fails with the error
	failAp  map[string]error // a change of Apply on a DN fails with the error
	changes int
	applied int
}

type fakeEntry struct {
	dn       string
	attrs    map[string][]string // lower-cased names
	password string
}

var _ Directory = (*FakeDirectory)(nil)

// NewFakeDirectory returns an empty FakeDirectory.
func NewFakeDirectory() *FakeDirectory {
	return &FakeDirectory{entries: map[string]*fakeEntry{}, fail: map[string]error{}, failAp: map[string]error{}}
}

// Add creates or replaces the entry dn with password and attributes given
// as name, value pairs.
func (f *FakeDirectory) Add(dn, password string, attrs ...string) {
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
func (f *FakeDirectory) Password(dn string) (string, bool) {
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
func (f *FakeDirectory) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// FailSetPassword makes SetPassword of dn fail with err (nil: succeed
// again). The error is wrapped with keel.ErrUnavailable.
func (f *FakeDirectory) FailSetPassword(dn string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, strings.ToLower(dn))
		return
	}
	f.fail[strings.ToLower(dn)] = err
}

// Changes returns how many passwords SetPassword has changed.
func (f *FakeDirectory) Changes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}

// DNs returns the DNs of the entries, sorted.
func (f *FakeDirectory) DNs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.entries {
		out = append(out, e.dn)
	}
	slices.Sort(out)
	return out
}

func (f *FakeDirectory) bindLocked(dn, password string) error {
	if f.down {
		return fmt.Errorf("fake directory: no server answers: %w", keel.ErrUnavailable)
	}
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok || password == "" || e.password != password {
		return fmt.Errorf("fake directory: bind as %q refused: %w", dn, keel.ErrUnauthenticated)
	}
	return nil
}

// Bind implements Directory.
func (f *FakeDirectory) Bind(_ context.Context, _ Conn, dn, password string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bindLocked(dn, password)
}

// FindDN implements Directory.
func (f *FakeDirectory) FindDN(_ context.Context, c Conn, base, attr, value string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.bindLocked(c.BindDN, c.BindPass); err != nil {
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
		return "", fmt.Errorf("fake directory: no entry under %q with %s=%q: %w", base, attr, value, keel.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("fake directory: several entries under %q with %s=%q: %w", base, attr, value, keel.ErrConflict)
}

// SetPassword implements Directory.
func (f *FakeDirectory) SetPassword(_ context.Context, c Conn, dn, password string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.bindLocked(c.BindDN, c.BindPass); err != nil {
		return err
	}
	if err := f.fail[strings.ToLower(dn)]; err != nil {
		return fmt.Errorf("fake directory: password change of %q: %v: %w", dn, err, keel.ErrUnavailable)
	}
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok {
		return fmt.Errorf("fake directory: entry %q: %w", dn, keel.ErrNotFound)
	}
	e.password = password
	f.changes++
	return nil
}

// FailApply makes every change of Apply on the entry dn fail with err
// (nil: succeed again). The error is wrapped with keel.ErrUnavailable.
func (f *FakeDirectory) FailApply(dn string, err error) {
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
func (f *FakeDirectory) Attr(dn, name string) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[strings.ToLower(dn)]
	if !ok {
		return nil, false
	}
	return slices.Clone(e.attrs[strings.ToLower(name)]), true
}

// Applied returns how many changes Apply has made.
func (f *FakeDirectory) Applied() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Apply implements Directory. An add or modify that sets userPassword
// sets the password Bind accepts (its first value, in clear); entries
// need no parent and attribute values are compared without regard to
// case.
func (f *FakeDirectory) Apply(_ context.Context, c Conn, changes []Change, keepGoing bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.bindLocked(c.BindDN, c.BindPass); err != nil {
		return err
	}
	var errs []error
	for i, ch := range changes {
		if err := f.applyLocked(ch); err != nil {
			errs = append(errs, &ChangeError{Index: i, Type: ch.Type, DN: ch.DN, Err: err})
			if !keepGoing {
				break
			}
			continue
		}
		f.applied++
	}
	return errors.Join(errs...)
}

func (f *FakeDirectory) applyLocked(ch Change) error {
	key := strings.ToLower(ch.DN)
	if err := f.failAp[key]; err != nil {
		return fmt.Errorf("fake directory: %s %q: %v: %w", ch.Type, ch.DN, err, keel.ErrUnavailable)
	}
	cur, exists := f.entries[key]
	switch ch.Type {
	case ChangeAdd:
		if exists {
			return fmt.Errorf("fake directory: entry %q exists: %w", ch.DN, keel.ErrAlreadyExists)
		}
		e := &fakeEntry{dn: ch.DN, attrs: map[string][]string{}}
		for _, a := range ch.Attributes {
			k := strings.ToLower(a.Name)
			e.attrs[k] = append(e.attrs[k], a.Values...)
		}
		e.syncPassword()
		f.entries[key] = e
	case ChangeDelete:
		if !exists {
			return fmt.Errorf("fake directory: entry %q: %w", ch.DN, keel.ErrNotFound)
		}
		delete(f.entries, key)
	case ChangeModify:
		if !exists {
			return fmt.Errorf("fake directory: entry %q: %w", ch.DN, keel.ErrNotFound)
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
			case ModAdd:
				for _, v := range m.Values {
					if has(v) {
						return fmt.Errorf("fake directory: %q already has %s %q: %w", ch.DN, m.Name, v, keel.ErrAlreadyExists)
					}
					vals = append(vals, v)
				}
			case ModDelete:
				if len(vals) == 0 {
					return fmt.Errorf("fake directory: %q has no %s: %w", ch.DN, m.Name, keel.ErrNotFound)
				}
				if len(m.Values) == 0 {
					vals = nil
				}
				for _, v := range m.Values {
					if !has(v) {
						return fmt.Errorf("fake directory: %q has no %s %q: %w", ch.DN, m.Name, v, keel.ErrNotFound)
					}
					vals = slices.DeleteFunc(vals, func(x string) bool { return strings.EqualFold(x, v) })
				}
			case ModReplace:
				vals = slices.Clone(m.Values)
			default:
				return fmt.Errorf("fake directory: modify operation %q: %w", m.Op, keel.ErrInvalid)
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
		return fmt.Errorf("fake directory: change type %q: %w", ch.Type, keel.ErrInvalid)
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
