package errprefix

import (
	"errors"
	"fmt"
	"testing"

	"github.com/keelhq/keel"
)

// TestPrefixOnce: Add, Set and Wrapf give messages with the prefix once,
// and keep the kinds and field errors of what they wrap.
func TestPrefixOnce(t *testing.T) {
	const p Prefix = "pkg: "
	inner := keel.Invalid("Name", "must not be empty")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{p.Add(inner), "pkg: " + inner.Error()},
		{p.Add(p.Add(inner)), "pkg: " + inner.Error()},
		{p.Add(errors.New("pkg: own")), "pkg: own"},
		{p.Wrapf(p.Add(inner), "role %q", "r"), `pkg: role "r": ` + inner.Error()},
		{p.Wrapf(fmt.Errorf("store: down: %w", keel.KindUnavailable), "read"), "pkg: read: store: down: unavailable"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
	}
	if err := p.Wrapf(p.Add(inner), "x"); keel.KindOf(err) != keel.KindInvalid || len(keel.FieldErrors(err)) != 1 {
		t.Errorf("kind or fields lost: %v", err)
	}
	var err error = errors.New("other")
	p.Set(&err)
	if err.Error() != "pkg: other" {
		t.Errorf("Set: %q", err)
	}
	var none error
	p.Set(&none)
	if none != nil {
		t.Errorf("Set(nil) = %v", none)
	}
}
