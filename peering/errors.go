package peering

// Error messages: every error the package returns starts with errPrefix,
// once, as every keel package's starts with its name ("kv: …"). Errors
// are made so:
//
//   - every exported function or method that returns an error defers
//     prefixErr, which adds the prefix to an error that lacks it (the
//     package's own messages, a broken rule's keel.ValidationError, the
//     errors of the store, the context and the Authorizer), keeping the
//     message after it; the package's own messages do not start with it;
//   - context put in front of an error that may already carry the prefix
//     (an error of another exported function: New's within Open, the
//     peer's Handle… answer through InProcess within Establish) goes
//     through wrapf, which drops the wrapped message's own prefix;
//   - a broken rule's text (keel.FieldError.Rule) never carries the
//     prefix: it is what an adapter may show under the field's name.
//
// Kinds and field errors are kept by every wrapping (errors.Is,
// errors.As, keel.KindOf and keel.FieldErrors see through it). A test
// parses the package's files and checks that every exported function
// that returns an error defers prefixErr (TestErrorPrefixGuard); another
// checks the messages of failing operations (TestErrorMessagesPrefix).

import (
	"fmt"
	"strings"
)

// errPrefix starts the message of every error of the package.
const errPrefix = "peering: "

// bare is err's message without the package's prefix: the text that a
// message adding context in front of err embeds.
func bare(err error) string { return strings.TrimPrefix(err.Error(), errPrefix) }

// prefixed returns err with the package's prefix: err itself when its
// message starts with it, and otherwise err wrapped, its message kept
// after the prefix.
func prefixed(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), errPrefix) {
		return err
	}
	return fmt.Errorf("peering: %w", err)
}

// prefixErr sets *err to prefixed(*err). Every exported function that
// returns an error defers it.
func prefixErr(err *error) { *err = prefixed(*err) }

// contextError is err with context in front: the prefix, the context,
// ": " and err's message without its own prefix.
type contextError struct {
	context string
	err     error
}

func (e *contextError) Error() string { return errPrefix + e.context + ": " + bare(e.err) }

func (e *contextError) Unwrap() error { return e.err }

// wrapf returns err with the context format, formatted with args, in
// front of its message, as fmt.Errorf("peering: "+format+": %w", args...,
// err) would, but with the package's prefix once: err's own is dropped.
func wrapf(err error, format string, args ...any) error {
	return &contextError{context: fmt.Sprintf(format, args...), err: err}
}
