package ldapengine

import (
	"errors"
	"testing"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel"
)

// TestChangeErr: a change the server refused was not made and is a
// conflict (trying again does not help), unless the refusal is transient;
// a failure on the client's side (timeout, lost connection) leaves the
// outcome unknown.
func TestChangeErr(t *testing.T) {
	for _, tc := range []struct {
		code    uint16
		kind    keel.Kind
		applied bool // ErrNotApplied
	}{
		{ldap.LDAPResultNotAllowedOnNonLeaf, keel.KindConflict, true},
		{ldap.LDAPResultConstraintViolation, keel.KindConflict, true},
		{ldap.LDAPResultInsufficientAccessRights, keel.KindConflict, true},
		{ldap.LDAPResultBusy, keel.KindUnavailable, true},
		{ldap.LDAPResultUnavailable, keel.KindUnavailable, true},
		{ldap.ErrorNetwork, keel.KindUnavailable, false},
	} {
		err := changeErr("delete", ldap.NewError(tc.code, errors.New("refused")))
		if keel.KindOf(err) != tc.kind || errors.Is(err, ErrNotApplied) != tc.applied {
			t.Errorf("code %d: %v: kind %v, not applied %v; want %v, %v", tc.code, err, keel.KindOf(err), errors.Is(err, ErrNotApplied), tc.kind, tc.applied)
		}
	}
	if err := changeErr("modify", errors.New("connection reset")); keel.KindOf(err) != keel.KindUnavailable || errors.Is(err, ErrNotApplied) {
		t.Errorf("a plain error: %v", err)
	}
}
