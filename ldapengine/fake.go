package ldapengine

import (
	"context"
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
	changes int
}

type fakeEntry struct {
	dn       string
	attrs    map[string][]string // lower-cased names
	password string
}

var _ Directory = (*FakeDirectory)(nil)

// NewFakeDirectory returns an empty FakeDirectory.
func NewFakeDirectory() *FakeDirectory {
	return &FakeDirectory{entries: map[string]*fakeEntry{}, fail: map[string]error{}}
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
