package keel_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
)

// allKinds pins every Kind to its wire value and its name. The values are
// stored and sent over the wire: renumbering one must fail this test.
var allKinds = []struct {
	kind  keel.Kind
	value uint8
	name  string
}{
	{keel.KindNone, 0, "no error"},
	{keel.KindUnknown, 1, "unknown error"},
	{keel.KindNotFound, 2, "not found"},
	{keel.KindAlreadyExists, 3, "already exists"},
	{keel.KindInvalid, 4, "invalid"},
	{keel.KindConflict, 5, "conflict"},
	{keel.KindForbidden, 6, "forbidden"},
	{keel.KindUnauthenticated, 7, "unauthenticated"},
	{keel.KindTooLarge, 8, "too large"},
	{keel.KindUnavailable, 9, "unavailable"},
	{keel.KindInternal, 10, "internal error"},
	{keel.KindCanceled, 11, "canceled"},
	{keel.KindDeadlineExceeded, 12, "deadline exceeded"},
}

func TestKindValuesArePinned(t *testing.T) {
	for _, tc := range allKinds {
		t.Run(tc.name, func(t *testing.T) {
			if got := uint8(tc.kind); got != tc.value {
				t.Errorf("Kind %q = %d, want %d (kinds are never renumbered)", tc.name, got, tc.value)
			}
		})
	}
}

func TestKindNames(t *testing.T) {
	seen := make(map[string]keel.Kind)
	for _, tc := range allKinds {
		name := tc.kind.String()
		if name == "" {
			t.Errorf("Kind(%d).String() is empty", tc.value)
		}
		if strings.HasPrefix(name, "kind(") {
			t.Errorf("Kind(%d) has no name: String() = %q", tc.value, name)
		}
		if name != tc.name {
			t.Errorf("Kind(%d).String() = %q, want %q", tc.value, name, tc.name)
		}
		if got := tc.kind.Error(); got != name {
			t.Errorf("Kind(%d).Error() = %q, want String() %q", tc.value, got, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("Kind(%d) and Kind(%d) share the name %q", uint8(prev), tc.value, name)
		}
		seen[name] = tc.kind
	}
	if got, want := keel.Kind(255).String(), "kind(255)"; got != want {
		t.Errorf("Kind(255).String() = %q, want %q", got, want)
	}
}

func TestSentinels(t *testing.T) {
	sentinels := []struct {
		err  error
		kind keel.Kind
	}{
		{keel.KindNotFound, keel.KindNotFound},
		{keel.KindAlreadyExists, keel.KindAlreadyExists},
		{keel.KindInvalid, keel.KindInvalid},
		{keel.KindConflict, keel.KindConflict},
		{keel.KindForbidden, keel.KindForbidden},
		{keel.KindUnauthenticated, keel.KindUnauthenticated},
		{keel.KindTooLarge, keel.KindTooLarge},
		{keel.KindUnavailable, keel.KindUnavailable},
		{keel.KindInternal, keel.KindInternal},
		{keel.KindCanceled, keel.KindCanceled},
		{keel.KindDeadlineExceeded, keel.KindDeadlineExceeded},
	}
	for _, s := range sentinels {
		t.Run(s.kind.String(), func(t *testing.T) {
			wrapped := fmt.Errorf("doing x: %w", s.err)
			if !errors.Is(wrapped, s.err) {
				t.Errorf("errors.Is(wrapped %v, %v) = false", s.err, s.err)
			}
			if !errors.Is(wrapped, s.kind) {
				t.Errorf("errors.Is(wrapped %v, Kind %v) = false", s.err, s.kind)
			}
			if got := keel.KindOf(wrapped); got != s.kind {
				t.Errorf("KindOf(wrapped %v) = %v, want %v", s.err, got, s.kind)
			}
			for _, other := range sentinels {
				if other.kind != s.kind && errors.Is(wrapped, other.err) {
					t.Errorf("errors.Is(wrapped %v, %v) = true", s.err, other.err)
				}
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	canceledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	expiredCtx, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()

	tests := []struct {
		name string
		err  error
		want keel.Kind
	}{
		{"nil", nil, keel.KindNone},
		{"plain error", errors.New("x"), keel.KindUnknown},
		{"wrapped plain error", fmt.Errorf("a: %w", errors.New("x")), keel.KindUnknown},
		{"sentinel", keel.KindNotFound, keel.KindNotFound},
		{"wrapped sentinel", fmt.Errorf("x: %w", keel.KindNotFound), keel.KindNotFound},
		{"doubly wrapped sentinel", fmt.Errorf("b: %w", fmt.Errorf("a: %w", keel.KindConflict)), keel.KindConflict},
		{"sentinel formatted with %v is lost", fmt.Errorf("x: %v", keel.KindNotFound), keel.KindUnknown},
		{"context.Canceled", context.Canceled, keel.KindCanceled},
		{"wrapped context.Canceled", fmt.Errorf("x: %w", context.Canceled), keel.KindCanceled},
		{"canceled ctx.Err", canceledCtx.Err(), keel.KindCanceled},
		{"context.DeadlineExceeded", context.DeadlineExceeded, keel.KindDeadlineExceeded},
		{"wrapped context.DeadlineExceeded", fmt.Errorf("x: %w", context.DeadlineExceeded), keel.KindDeadlineExceeded},
		{"expired ctx.Err", fmt.Errorf("x: %w", expiredCtx.Err()), keel.KindDeadlineExceeded},
		{"kind wins over context.Canceled", fmt.Errorf("%w: %w", context.Canceled, keel.KindUnavailable), keel.KindUnavailable},
		{"kind wins over context.DeadlineExceeded", errors.Join(context.DeadlineExceeded, keel.KindNotFound), keel.KindNotFound},
		{"kind under context.Canceled wins", fmt.Errorf("x: %w", errors.Join(context.Canceled, fmt.Errorf("y: %w", keel.KindInternal))), keel.KindInternal},
		{"join of two kinds: the first", errors.Join(keel.KindNotFound, keel.KindConflict), keel.KindNotFound},
		{"join of two kinds reversed: the first", errors.Join(keel.KindConflict, keel.KindNotFound), keel.KindConflict},
		{"join with a plain error first", errors.Join(errors.New("x"), keel.KindTooLarge), keel.KindTooLarge},
		{"field error", &keel.FieldError{Field: "a", Rule: "b"}, keel.KindInvalid},
		{"invalid", keel.Invalid("a", "b"), keel.KindInvalid},
		{"wrapped invalid", fmt.Errorf("x: %w", keel.Invalid("a", "b")), keel.KindInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := keel.KindOf(tc.err); got != tc.want {
				t.Errorf("KindOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestValidationZeroValue(t *testing.T) {
	var v keel.Validation
	if n := v.Len(); n != 0 {
		t.Errorf("zero Validation: Len() = %d, want 0", n)
	}
	if err := v.Err(); err != nil {
		t.Errorf("zero Validation: Err() = %#v, want nil", err)
	}
}

func TestValidationCollectsEveryProblem(t *testing.T) {
	var v keel.Validation
	v.Add("name", "is required")
	v.Add("size", "must be at most %d, got %d", 10, 12)
	v.Add("tags[2]", "must not be %q", "")
	if n := v.Len(); n != 3 {
		t.Errorf("Len() = %d, want 3", n)
	}

	err := v.Err()
	if err == nil {
		t.Fatal("Err() = nil after 3 Adds")
	}
	var ve *keel.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Err() is %T, want *keel.ValidationError", err)
	}
	if !errors.Is(err, keel.KindInvalid) {
		t.Error("errors.Is(err, KindInvalid) = false")
	}
	if errors.Is(err, keel.KindNotFound) {
		t.Error("errors.Is(err, KindNotFound) = true")
	}
	if got := keel.KindOf(err); got != keel.KindInvalid {
		t.Errorf("KindOf(err) = %v, want %v", got, keel.KindInvalid)
	}

	want := []keel.FieldError{
		{Field: "name", Rule: "is required"},
		{Field: "size", Rule: "must be at most 10, got 12"},
		{Field: "tags[2]", Rule: `must not be ""`},
	}
	if got := deref(keel.FieldErrors(err)); !reflect.DeepEqual(got, want) {
		t.Errorf("FieldErrors(err) = %+v, want %+v", got, want)
	}
	if got := deref(ve.Fields()); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields() = %+v, want %+v", got, want)
	}

	msg := err.Error()
	for _, fe := range want {
		if !strings.Contains(msg, fe.Field) || !strings.Contains(msg, fe.Rule) {
			t.Errorf("message %q does not name %q / %q", msg, fe.Field, fe.Rule)
		}
	}
	if wantMsg := `invalid request: name: is required; size: must be at most 10, got 12; tags[2]: must not be ""`; msg != wantMsg {
		t.Errorf("message = %q, want %q", msg, wantMsg)
	}
}

func TestValidationRuleWithoutArgsIsNotFormatted(t *testing.T) {
	var v keel.Validation
	v.Add("ratio", "must be at most 100%")
	got := keel.FieldErrors(v.Err())
	if len(got) != 1 || got[0].Rule != "must be at most 100%" {
		t.Errorf("FieldErrors = %+v, want one with rule %q", deref(got), "must be at most 100%")
	}
}

func TestValidationErrIsASnapshot(t *testing.T) {
	var v keel.Validation
	v.Add("a", "first")
	err := v.Err()
	v.Add("b", "second")

	if got := keel.FieldErrors(err); len(got) != 1 || got[0].Field != "a" {
		t.Errorf("after a later Add, the earlier error holds %+v, want only field a", deref(got))
	}
	if msg, want := err.Error(), "invalid request: a: first"; msg != want {
		t.Errorf("after a later Add, the earlier error says %q, want %q", msg, want)
	}
	if got := keel.FieldErrors(v.Err()); len(got) != 2 {
		t.Errorf("new Err() holds %d problems, want 2", len(got))
	}
}

func TestInvalid(t *testing.T) {
	err := keel.Invalid("data.attributes.name", "must be %d to %d characters", 3, 36)
	var ve *keel.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Invalid returned %T, want *keel.ValidationError", err)
	}
	if !errors.Is(err, keel.KindInvalid) {
		t.Error("errors.Is(err, KindInvalid) = false")
	}
	if got := keel.KindOf(err); got != keel.KindInvalid {
		t.Errorf("KindOf = %v, want %v", got, keel.KindInvalid)
	}
	want := []keel.FieldError{{Field: "data.attributes.name", Rule: "must be 3 to 36 characters"}}
	if got := deref(keel.FieldErrors(err)); !reflect.DeepEqual(got, want) {
		t.Errorf("FieldErrors = %+v, want %+v", got, want)
	}
	if got, want := err.Error(), "invalid request: data.attributes.name: must be 3 to 36 characters"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestFieldErrors(t *testing.T) {
	var v keel.Validation
	v.Add("a", "rule a")
	v.Add("b", "rule b")
	v.Add("c", "rule c")
	three := []keel.FieldError{{Field: "a", Rule: "rule a"}, {Field: "b", Rule: "rule b"}, {Field: "c", Rule: "rule c"}}
	lone := &keel.FieldError{Field: "x", Rule: "rule x"}

	tests := []struct {
		name string
		err  error
		want []keel.FieldError
	}{
		{"nil", nil, nil},
		{"plain error", errors.New("x"), nil},
		{"bare KindInvalid carries no fields", keel.KindInvalid, nil},
		{"wrapped KindInvalid", fmt.Errorf("x: %w", keel.KindInvalid), nil},
		{"validation error", v.Err(), three},
		{"wrapped validation error", fmt.Errorf("creating: %w", v.Err()), three},
		{"doubly wrapped validation error", fmt.Errorf("b: %w", fmt.Errorf("a: %w", v.Err())), three},
		{"joined validation error", errors.Join(errors.New("other"), v.Err()), three},
		{"first validation error in the tree", errors.Join(keel.Invalid("first", "r"), v.Err()), []keel.FieldError{{Field: "first", Rule: "r"}}},
		{"lone field error", lone, []keel.FieldError{*lone}},
		{"wrapped lone field error", fmt.Errorf("x: %w", lone), []keel.FieldError{*lone}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := keel.FieldErrors(tc.err)
			if tc.want == nil {
				if got != nil {
					t.Errorf("FieldErrors(%v) = %+v, want nil", tc.err, deref(got))
				}
				return
			}
			if d := deref(got); !reflect.DeepEqual(d, tc.want) {
				t.Errorf("FieldErrors(%v) = %+v, want %+v", tc.err, d, tc.want)
			}
		})
	}
}

func TestFieldError(t *testing.T) {
	tests := []struct {
		name string
		fe   keel.FieldError
		want string
	}{
		{"with field", keel.FieldError{Field: "rotation_period", Rule: "must be positive"}, "rotation_period: must be positive"},
		{"without field", keel.FieldError{Rule: "name or id is required"}, "name or id is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := tc.fe
			if got := fe.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if !errors.Is(&fe, keel.KindInvalid) {
				t.Error("errors.Is(fieldError, KindInvalid) = false")
			}
		})
	}
}

// deref copies the FieldErrors so that a failure prints values, not
// pointers, and reflect.DeepEqual compares them.
func deref(fes []*keel.FieldError) []keel.FieldError {
	if fes == nil {
		return nil
	}
	out := make([]keel.FieldError, len(fes))
	for i, fe := range fes {
		out[i] = *fe
	}
	return out
}

func TestWithRetryAfter(t *testing.T) {
	base := fmt.Errorf("role r: outcome unknown: %w", keel.KindUnavailable)
	err := fmt.Errorf("static-cred: %w", keel.WithRetryAfter(base, 3*time.Second))
	if keel.KindOf(err) != keel.KindUnavailable || err.Error() != "static-cred: role r: outcome unknown: unavailable" {
		t.Fatalf("kind %v, message %q", keel.KindOf(err), err)
	}
	if d, ok := keel.RetryAfterOf(err); !ok || d != 3*time.Second {
		t.Fatalf("RetryAfterOf = %v, %v", d, ok)
	}
	if d, _ := keel.RetryAfterOf(keel.WithRetryAfter(base, time.Millisecond)); d != time.Second {
		t.Fatalf("a hint below a second: %v", d)
	}
	if _, ok := keel.RetryAfterOf(base); ok {
		t.Fatal("a hint without WithRetryAfter")
	}
	if keel.WithRetryAfter(nil, time.Second) != nil {
		t.Fatal("nil error got a hint")
	}
}
