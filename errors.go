package keel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Kind classifies an error by what the caller can do about it. Every error
// returned by a keel package wraps exactly one Kind, so that
// errors.Is(err, keel.KindNotFound) and KindOf(err) == KindNotFound agree.
//
// The numeric values are stable: they may be stored, logged or sent over the
// wire, and are never renumbered. New kinds are only ever appended.
//
// A Kind is itself an error, and the sentinel of its kind: wrap it with
// fmt.Errorf and %w to add context, test for it with errors.Is. Its message
// is the kind's name in lower case words ("not found").
type Kind uint8

// The kinds of error. The zero value KindNone is what KindOf returns for a
// nil error.
const (
	KindNone             Kind = 0  // no error
	KindUnknown          Kind = 1  // an error that carries no kind
	KindNotFound         Kind = 2  // the object does not exist
	KindAlreadyExists    Kind = 3  // an object of that identity exists
	KindInvalid          Kind = 4  // the request breaks a rule; see FieldErrors
	KindConflict         Kind = 5  // the state of the object forbids the request now
	KindForbidden        Kind = 6  // the caller lacks the right
	KindUnauthenticated  Kind = 7  // the caller is not known
	KindTooLarge         Kind = 8  // a size or count limit is exceeded
	KindUnavailable      Kind = 9  // a dependency (store, directory, peer) cannot be reached or is closed
	KindInternal         Kind = 10 // a bug or a broken invariant
	KindCanceled         Kind = 11 // the context was canceled
	KindDeadlineExceeded Kind = 12 // the context's deadline passed
)

var kindNames = [...]string{
	KindNone:             "no error",
	KindUnknown:          "unknown error",
	KindNotFound:         "not found",
	KindAlreadyExists:    "already exists",
	KindInvalid:          "invalid",
	KindConflict:         "conflict",
	KindForbidden:        "forbidden",
	KindUnauthenticated:  "unauthenticated",
	KindTooLarge:         "too large",
	KindUnavailable:      "unavailable",
	KindInternal:         "internal error",
	KindCanceled:         "canceled",
	KindDeadlineExceeded: "deadline exceeded",
}

// Error returns the kind's name, such as "not found".
func (k Kind) Error() string { return k.String() }

// String returns the kind's name, such as "not found".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// KindOf returns the kind of err: KindNone for nil, the first Kind found in
// err's tree (errors.As order), KindCanceled or KindDeadlineExceeded for an
// error that wraps context.Canceled or context.DeadlineExceeded, and
// KindUnknown otherwise.
func KindOf(err error) Kind {
	if err == nil {
		return KindNone
	}
	var k Kind
	if errors.As(err, &k) {
		return k
	}
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindDeadlineExceeded
	}
	return KindUnknown
}

// FieldError is one broken rule of a request: the field it concerns, as a
// Go path into the operation's input, and the rule, as a sentence fragment
// ("must be 3 to 36 characters"). A FieldError is of kind KindInvalid.
//
// Field speaks the library's language, never a wire format's:
//
//   - a field of an input struct is named as in Go: "Name", "BindDN",
//     "MemberEntityIDs";
//   - a nested field follows a dot, a slice element its index in
//     brackets, a map entry its key quoted as Go quotes it:
//     "Enforce[0].Mode", "PolicySetIDs[2]", `Options["version"]`;
//   - a plain argument is named by its parameter, with its first letter
//     upper-cased as if the arguments were a struct: "LeaseID" for
//     leaseID, "Increment", "Prefix";
//   - "" is the request as a whole.
//
// A rule does not name other fields by a wire name either; it says what
// it means in words ("must not exceed the maximum TTL"). Adapters map the
// path to their wire names (a JSON:API pointer, a snake_case key) in one
// table each.
type FieldError struct {
	Field string
	Rule  string
}

// Error returns "field: rule", or the rule alone when Field is empty.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// Unwrap returns KindInvalid.
func (e *FieldError) Unwrap() error { return KindInvalid }

// Invalid returns an error of kind KindInvalid for one field. The rule is
// formatted with fmt.Sprintf.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{errs: &multierror.Error{Errors: []error{newFieldError(field, format, args)}}}
}

func newFieldError(field, format string, args []any) *FieldError {
	rule := format
	if len(args) > 0 {
		rule = fmt.Sprintf(format, args...)
	}
	return &FieldError{Field: field, Rule: rule}
}

// Validation collects every broken rule of one request, so that the caller
// learns all of them at once. The zero value is ready to use. A Validation is
// not safe for concurrent use.
//
//	var v keel.Validation
//	if name == "" {
//		v.Add("name", "is required")
//	}
//	if size > 10 {
//		v.Add("size", "must be at most %d, got %d", 10, size)
//	}
//	err := v.Err() // nil when no rule is broken
type Validation struct {
	errs *multierror.Error
}

// Add records that field breaks rule; the rule is formatted with
// fmt.Sprintf.
func (v *Validation) Add(field, format string, args ...any) {
	v.errs = multierror.Append(v.errs, newFieldError(field, format, args))
}

// Len reports how many problems have been recorded.
func (v *Validation) Len() int {
	// multierror.Error.Len has a value receiver: calling it on the nil
	// *multierror.Error of a zero Validation would panic.
	if v.errs == nil {
		return 0
	}
	return len(v.errs.Errors)
}

// Err returns nil when no problem was recorded, and otherwise a
// *ValidationError holding every problem in the order they were added.
func (v *Validation) Err() error {
	if v.Len() == 0 {
		return nil
	}
	// Copy the list, so that a later Add does not change an error
	// already returned.
	return &ValidationError{errs: &multierror.Error{Errors: slices.Clone(v.errs.Errors)}}
}

// ValidationError is the error of a request that breaks one or more rules.
// It is of kind KindInvalid; FieldErrors lists its problems.
type ValidationError struct {
	errs *multierror.Error
}

// Error lists every problem, separated by "; ".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.errs.Errors))
	for i, fe := range e.errs.Errors {
		parts[i] = fe.Error()
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// Unwrap returns KindInvalid followed by each problem.
func (e *ValidationError) Unwrap() []error {
	return append([]error{KindInvalid}, e.errs.Errors...)
}

// Fields returns the problems in the order they were added.
func (e *ValidationError) Fields() []*FieldError {
	out := make([]*FieldError, 0, len(e.errs.Errors))
	for _, err := range e.errs.Errors {
		var fe *FieldError
		if errors.As(err, &fe) {
			out = append(out, fe)
		}
	}
	return out
}

// FieldErrors returns the field problems carried by err: those of the first
// *ValidationError in its tree, or the first *FieldError alone, or nil.
func FieldErrors(err error) []*FieldError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Fields()
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return []*FieldError{fe}
	}
	return nil
}

// retryAfter is an error that tells when trying again may succeed.
type retryAfter struct {
	err   error
	after time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// WithRetryAfter returns err with a hint that the same request may succeed
// after d: a state that settles by itself (a password change whose outcome
// is being checked, a dependency coming back). err keeps its kind and
// message; an adapter may send the hint (HTTP's Retry-After). A nil err
// stays nil; d below one second is one second.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfter{err: err, after: max(d, time.Second)}
}

// RetryAfterOf returns the hint of WithRetryAfter found in err's tree.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *retryAfter
	if errors.As(err, &ra) {
		return ra.after, true
	}
	return 0, false
}
