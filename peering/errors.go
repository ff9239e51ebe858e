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
//     peer's Handle… answer through the Transport within Establish) goes
//     through wrapf, which drops the wrapped message's own prefix;
//   - a broken rule's text (keel.FieldError.Rule) never carries the
//     prefix: it is what an adapter may show under the field's name.
//
// Kinds and field errors are kept by every wrapping (errors.Is,
// errors.As, keel.KindOf and keel.FieldErrors see through it). A test
// parses the package's files and checks that every exported function
// that returns an error defers prefixErr (TestErrorPrefixGuard); another
// checks the messages of failing operations (TestErrorMessagesPrefix).

import "github.com/keelhq/keel/internal/errprefix"

// errPrefix starts the message of every error of the package.
const errPrefix errprefix.Prefix = "peering: "

// prefixErr sets *err to prefixed(*err). Every exported function that
// returns an error defers it.
func prefixErr(err *error) { errPrefix.Set(err) }

// wrapf returns err with context in front of its message and the
// package's prefix once (errprefix.Prefix.Wrapf).
func wrapf(err error, format string, args ...any) error {
	return errPrefix.Wrapf(err, format, args...)
}
