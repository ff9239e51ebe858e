// Package errprefix keeps the rule that every error a keel package returns
// starts with the package's name, once ("peering: …"), for the packages
// that pass on the errors of others (the store, the context, an
// Authorizer, a directory) and add context to errors that may carry the
// prefix already. Kinds and field errors are kept by every wrapping:
// errors.Is, errors.As, keel.KindOf and keel.FieldErrors see through it.
package errprefix

import (
	"fmt"
	"strings"
)

// A Prefix is a package's name and ": ".
type Prefix string

// Bare returns err's message without p: the text a message that adds
// context in front of err embeds.
func (p Prefix) Bare(err error) string { return strings.TrimPrefix(err.Error(), string(p)) }

// Add returns err with p in front: err itself when its message starts
// with p, else err wrapped, its message kept after p.
func (p Prefix) Add(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), string(p)) {
		return err
	}
	return &prefixed{p: p, err: err}
}

// Set sets *err to p.Add(*err); an exported function that returns an
// error defers it, so that the errors of other packages it passes on name
// the package too.
func (p Prefix) Set(err *error) { *err = p.Add(*err) }

// Wrapf returns err with the context format, formatted with args, in front
// of its message, as fmt.Errorf(p+format+": %w", args..., err) would, but
// with p once at the start: err's own p is dropped. The context must not
// start with p.
func (p Prefix) Wrapf(err error, format string, args ...any) error {
	return &contextError{p: p, context: fmt.Sprintf(format, args...), err: err}
}

type prefixed struct {
	p   Prefix
	err error
}

func (e *prefixed) Error() string { return string(e.p) + e.err.Error() }
func (e *prefixed) Unwrap() error { return e.err }

type contextError struct {
	p       Prefix
	context string
	err     error
}

func (e *contextError) Error() string { return string(e.p) + e.context + ": " + e.p.Bare(e.err) }
func (e *contextError) Unwrap() error { return e.err }
