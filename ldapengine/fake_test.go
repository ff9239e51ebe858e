package ldapengine

import (
	"context"
	"errors"

	"github.com/keelhq/keel/ldapengine/internal/fakedir"
)

// fakeDirectory is the in-memory Directory of this package's tests: the
// directory of package fakedir (its Add, Password, Attr, DNs, SetDown,
// FailSetPassword, FailApply, Changes and Applied), adapted to Directory
// as ldaptest.Directory is (which these tests cannot import: it imports
// ldapengine).
type fakeDirectory struct {
	*fakedir.Directory
}

var _ Directory = (*fakeDirectory)(nil)

func newFakeDirectory() *fakeDirectory { return &fakeDirectory{fakedir.New()} }

func (f *fakeDirectory) Bind(_ context.Context, _ Conn, dn, password string) error {
	return f.Directory.Bind(dn, password)
}

func (f *fakeDirectory) FindDN(_ context.Context, c Conn, base, attr, value string) (string, error) {
	dn, err := f.Directory.FindDN(c.BindDN, c.BindPass, base, attr, value)
	return dn, notSent(err)
}

func (f *fakeDirectory) EntryExists(_ context.Context, c Conn, dn string) error {
	return f.Directory.EntryExists(c.BindDN, c.BindPass, dn)
}

func (f *fakeDirectory) SetPassword(_ context.Context, c Conn, dn, password string) error {
	return notSent(f.Directory.SetPassword(c.BindDN, c.BindPass, dn, password))
}

// notSent marks with ErrNotApplied an error of a change the directory
// certainly did not make. Its message is the fake's, which says so
// already (fakedir.ErrNotSent).
func notSent(err error) error {
	if errors.Is(err, fakedir.ErrNotSent) {
		return &notSentError{err}
	}
	return err
}

type notSentError struct{ err error }

func (e *notSentError) Error() string   { return e.err.Error() }
func (e *notSentError) Unwrap() []error { return []error{e.err, ErrNotApplied} }

func (f *fakeDirectory) Apply(_ context.Context, c Conn, changes []Change, keepGoing bool) error {
	failed, err := f.Directory.Apply(c.BindDN, c.BindPass, changes, keepGoing)
	if err != nil {
		return notSent(err)
	}
	errs := make([]error, len(failed))
	for i, fl := range failed {
		ch := changes[fl.Index]
		errs[i] = &ChangeError{Index: fl.Index, Type: ch.Type, DN: ch.DN, Err: notSent(fl.Err)}
	}
	return errors.Join(errs...)
}
