package ldapengine

// Error messages: every error the package returns starts with errPrefix,
// once, as every keel package's starts with its name ("kv: …"). Errors
// are made so:
//
//   - an error of the package's own is made with its message starting
//     with the prefix: fmt.Errorf("ldapengine: …"), errors.New
//     ("ldapengine: …");
//   - a broken rule is made by invalid or validation, which add the
//     prefix around the keel.ValidationError, not to the rule: the rule
//     is what an adapter shows under the field's wire name
//     (keel.FieldErrors), and stays as Vault words it;
//   - context added around an error that may be the package's own (or a
//     Directory's, or another package's) goes through wrapf, which puts
//     the context after the prefix and drops the wrapped message's own
//     prefix; an error embedded with %v in a message or a rule is
//     embedded as bare(err);
//   - errors of other packages (the store, the context, the authorizer,
//     the lease manager, a Directory) reach the caller through
//     prefixErr, deferred by every exported function: it adds the
//     prefix to an error that lacks it, keeping the message after it.
//
// A test parses the package's files and checks these rules
// (TestErrorMessagesGuard), another one the messages of failing
// operations (TestErrorMessagesPrefix).

import (
	"fmt"
	"github.com/keelhq/keel/internal/errprefix"
	"strings"

	"github.com/keelhq/keel"
)

// errPrefix starts the message of every error of the package.
const errPrefix errprefix.Prefix = "ldapengine: "

// bare is err's message without the package's prefix: the text that a
// message adding context in front of err embeds.
func bare(err error) string { return errPrefix.Bare(err) }

// prefixErr sets *err to prefixed(*err). Every exported function that
// returns an error defers it.
func prefixErr(err *error) { errPrefix.Set(err) }

// wrapf returns err with context in front of its message and the
// package's prefix once (errprefix.Prefix.Wrapf).
func wrapf(err error, format string, args ...any) error {
	return errPrefix.Wrapf(err, format, args...)
}

// invalid is keel.Invalid with the package's prefix in front of the
// message; the rule itself, which adapters show, does not carry it.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("ldapengine: %w", keel.Invalid(field, format, args...))
}

// validation returns the problems recorded in v (v.Err) with the
// package's prefix in front of the message, or nil when there are none.
func validation(v *keel.Validation) error {
	if err := v.Err(); err != nil {
		return fmt.Errorf("ldapengine: %w", err)
	}
	return nil
}

// notAppliedError marks err as the error of a change that was certainly
// not made: it wraps err and ErrNotApplied, in that order, as
// fmt.Errorf("%w: %w", err, ErrNotApplied) would, without repeating the
// package's prefix of ErrNotApplied in the middle of the message.
type notAppliedError struct{ err error }

func notApplied(err error) error { return &notAppliedError{err: err} }

func (e *notAppliedError) Error() string { return e.err.Error() + ": " + bare(ErrNotApplied) }

func (e *notAppliedError) Unwrap() []error { return []error{e.err, ErrNotApplied} }

// joinError is the package's errors.Join: the messages of errs one a
// line, each without the package's prefix, and the prefix once in front.
type joinError struct{ errs []error }

// join returns the errors of errs that are not nil joined in a
// joinError, or nil when there are none.
func join(errs ...error) error {
	var keep []error
	for _, err := range errs {
		if err != nil {
			keep = append(keep, err)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return &joinError{errs: keep}
}

func (e *joinError) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = bare(err)
	}
	return string(errPrefix) + strings.Join(lines, "\n")
}

func (e *joinError) Unwrap() []error { return e.errs }

// listFormat is the go-multierror format of the package's errors:
// multierror.ListFormatFunc's list, with the package's prefix once, in
// front.
func listFormat(es []error) string {
	points := make([]string, len(es))
	for i, err := range es {
		points[i] = "* " + bare(err)
	}
	count := "1 error occurred"
	if len(es) != 1 {
		count = fmt.Sprintf("%d errors occurred", len(es))
	}
	return string(errPrefix) + count + ":\n\t" + strings.Join(points, "\n\t") + "\n\n"
}
