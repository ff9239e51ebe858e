// Package ldaptest provides Directory, an in-memory ldapengine.Directory
// for tests and examples of programs that use package ldapengine (as
// net/http/httptest does for net/http).
//
// # Basics
//
// NewDirectory returns an empty directory; Add puts entries in it, and the
// engine given it (ldapengine.Options.Directory, mount.Options.Directory)
// binds, searches, changes passwords and applies LDIF changes as it would
// on a server. Password, Attr and DNs read its state; SetDown,
// FailSetPassword and FailApply make calls fail; Changes and Applied count
// what was done.
//
// # Errors
//
// Errors wrap the kinds of package keel, as ldapengine.Directory states:
// keel.KindUnavailable when down or told to fail, keel.KindUnauthenticated
// for a refused bind, keel.KindNotFound, keel.KindConflict and
// keel.KindAlreadyExists.
//
// # Concurrency
//
// A Directory is safe for concurrent use.
//
// # Caveats
//
// It is not LDAP: entries are a flat set keyed by their DN without regard
// to case, need no parent, and keep their password in clear; the URLs,
// TLS settings and schema of an ldapengine.Conn are ignored, and its
// BindDN and BindPass are checked on every call.
package ldaptest

import (
	"context"
	"errors"
	"time"

	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/internal/fakedir"
)

// Directory is an in-memory ldapengine.Directory: a flat set of entries
// with attributes and a clear-text password. The zero value is not usable:
// create one with NewDirectory. A Directory is safe for concurrent use.
type Directory struct {
	d *fakedir.Directory
}

var _ ldapengine.Directory = (*Directory)(nil)

// NewDirectory returns an empty Directory.
func NewDirectory() *Directory { return &Directory{d: fakedir.New()} }

// Add creates or replaces the entry dn with password and attributes given
// as name, value pairs (a last name without a value is ignored).
func (f *Directory) Add(dn, password string, attrs ...string) { f.d.Add(dn, password, attrs...) }

// Password returns the password of the entry dn, and whether it exists.
func (f *Directory) Password(dn string) (string, bool) { return f.d.Password(dn) }

// Attr returns the values of the attribute name of the entry dn (nil when
// it has none), and whether the entry exists.
func (f *Directory) Attr(dn, name string) ([]string, bool) { return f.d.Attr(dn, name) }

// DNs returns the DNs of the entries, sorted.
func (f *Directory) DNs() []string { return f.d.DNs() }

// SetDown makes every later call fail as if no server answered (down
// true, keel.KindUnavailable), or lets them through again.
func (f *Directory) SetDown(down bool) { f.d.SetDown(down) }

// FailSetPassword makes SetPassword of dn fail with err (nil: succeed
// again). The error is wrapped with keel.KindUnavailable.
func (f *Directory) FailSetPassword(dn string, err error) { f.d.FailSetPassword(dn, err) }

// FailApply makes every change of Apply on the entry dn fail with err
// (nil: succeed again). The error is wrapped with keel.KindUnavailable.
func (f *Directory) FailApply(dn string, err error) { f.d.FailApply(dn, err) }

// SetLatency makes every later password change take d more (a server's
// round trip), during which changes of other entries proceed.
func (f *Directory) SetLatency(d time.Duration) { f.d.SetLatency(d) }

// LoseReplies makes SetPassword of dn change the password and then fail
// as if its reply were lost (lose true): an error of kind
// keel.KindUnavailable without ldapengine.ErrNotApplied, so that the
// engine cannot know whether the change was made. LoseReplies(dn, false)
// ends it.
func (f *Directory) LoseReplies(dn string, lose bool) { f.d.LoseReplies(dn, lose) }

// Changes returns how many passwords SetPassword has changed.
func (f *Directory) Changes() int { return f.d.Changes() }

// Applied returns how many changes Apply has made.
func (f *Directory) Applied() int { return f.d.Applied() }

// Bind implements ldapengine.Directory: dn binds when it exists and
// password, not empty, is its password.
func (f *Directory) Bind(_ context.Context, _ ldapengine.Conn, dn, password string) error {
	return f.d.Bind(dn, password)
}

// FindDN implements ldapengine.Directory; values are compared without
// regard to case.
func (f *Directory) FindDN(_ context.Context, c ldapengine.Conn, base, attr, value string) (string, error) {
	dn, err := f.d.FindDN(c.BindDN, c.BindPass, base, attr, value)
	return dn, notApplied(err)
}

// EntryExists implements ldapengine.Directory.
func (f *Directory) EntryExists(_ context.Context, c ldapengine.Conn, dn string) error {
	return f.d.EntryExists(c.BindDN, c.BindPass, dn)
}

// SetPassword implements ldapengine.Directory, whatever c.Schema.
func (f *Directory) SetPassword(_ context.Context, c ldapengine.Conn, dn, password string) error {
	return notApplied(f.d.SetPassword(c.BindDN, c.BindPass, dn, password))
}

// notApplied marks with ldapengine.ErrNotApplied an error of a change the
// directory certainly did not make. The message stays the fake's, which
// says so already (fakedir.ErrNotSent): ErrNotApplied's own would name
// package ldapengine in the middle of the engine's messages, which name it
// once, in front.
func notApplied(err error) error {
	if errors.Is(err, fakedir.ErrNotSent) {
		return &notAppliedError{err}
	}
	return err
}

type notAppliedError struct{ err error }

func (e *notAppliedError) Error() string   { return e.err.Error() }
func (e *notAppliedError) Unwrap() []error { return []error{e.err, ldapengine.ErrNotApplied} }

// Apply implements ldapengine.Directory. An add or modify that sets
// userPassword sets the password Bind accepts (its first value, in
// clear); entries need no parent and attribute values are compared
// without regard to case.
func (f *Directory) Apply(_ context.Context, c ldapengine.Conn, changes []ldapengine.Change, keepGoing bool) error {
	failed, err := f.d.Apply(c.BindDN, c.BindPass, changes, keepGoing)
	if err != nil {
		return notApplied(err)
	}
	errs := make([]error, len(failed))
	for i, fl := range failed {
		ch := changes[fl.Index]
		errs[i] = &ldapengine.ChangeError{Index: fl.Index, Type: ch.Type, DN: ch.DN, Err: notApplied(fl.Err)}
	}
	return errors.Join(errs...)
}
