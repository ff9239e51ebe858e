package policy

import (
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
)

// TestErrorMessagesGuard: every exported function that returns an error
// begins with defer prefixErr(&err), so that every error the package
// returns starts with "policy: ".
func TestErrorMessagesGuard(t *testing.T) {
	if checked := keeltest.CheckDeferredPrefix(t); checked < 15 {
		t.Errorf("%d exported functions returning an error checked, want every one", checked)
	}
}

// TestErrorMessagesPrefix: the errors of failing operations start with
// "policy: " exactly once, and keep their kinds and fields.
func TestErrorMessagesPrefix(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	p := e.mk(t, "pol")
	_, errNotFound := e.s.Get(root(), "pol-nope")
	_, errInvalid := e.s.Create(root(), "acme", CreateRequest{Name: ptr("a b")})
	_, errExists := e.s.Create(root(), "acme", CreateRequest{Name: ptr("pol"), EnforcementLevel: ptr(Advisory)})
	_, errKind := e.s.List(root(), "acme", ListRequest{FilterKind: "x"})
	errTooLarge := e.s.Upload(root(), p.ID, make([]byte, MaxCodeSize+1))
	_, errDownload := e.s.Download(root(), p.ID)
	for name, tc := range map[string]struct {
		err  error
		kind keel.Kind
	}{
		"not found":        {errNotFound, keel.KindNotFound},
		"invalid":          {errInvalid, keel.KindInvalid},
		"already exists":   {errExists, keel.KindAlreadyExists},
		"filter kind":      {errKind, keel.KindInvalid},
		"too large":        {errTooLarge, keel.KindTooLarge},
		"nothing uploaded": {errDownload, keel.KindNotFound},
	} {
		if tc.err == nil || keel.KindOf(tc.err) != tc.kind {
			t.Errorf("%s: %v, want kind %v", name, tc.err, tc.kind)
			continue
		}
		if msg := tc.err.Error(); !strings.HasPrefix(msg, "policy: ") || strings.Count(msg, "policy: ") != 1 {
			t.Errorf("%s: %q does not start with \"policy: \" once", name, msg)
		}
	}
}
