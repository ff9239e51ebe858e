package project

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
)

// TestErrorMessagesGuard: every exported function that returns an error
// begins with defer prefixErr(&err), so that every error the package
// returns starts with "project: ".
func TestErrorMessagesGuard(t *testing.T) {
	if checked := keeltest.CheckDeferredPrefix(t); checked < 30 {
		t.Errorf("%d exported functions returning an error checked, want every one", checked)
	}
}

// TestErrorMessagesPrefix: the errors of failing operations, the
// package's own, the Authorizer's and broken rules, start with "project: "
// exactly once, and keep their kinds and fields.
func TestErrorMessagesPrefix(t *testing.T) {
	e := newEnv(t, everystore.Mem, rules(t, nil), nil)
	nobody := as("nobody")
	_, errNotFound := e.c.Get(root(), "prj-nope")
	_, errForbidden := e.c.CreateOrganization(nobody, OrganizationRequest{Name: ptr("beta")})
	_, errInvalid := e.c.Create(root(), "acme", ProjectRequest{Name: ptr("x")})
	_, errExists := e.c.CreateOrganization(root(), OrganizationRequest{Name: ptr("acme")})
	errConflict := e.c.Delete(root(), e.org.DefaultProjectID)
	_, errList := e.c.List(root(), "acme", ListRequest{Offset: -1})
	for name, tc := range map[string]struct {
		err  error
		kind keel.Kind
	}{
		"not found":      {errNotFound, keel.KindNotFound},
		"forbidden":      {errForbidden, keel.KindForbidden},
		"invalid":        {errInvalid, keel.KindInvalid},
		"already exists": {errExists, keel.KindAlreadyExists},
		"conflict":       {errConflict, keel.KindConflict},
		"list":           {errList, keel.KindInvalid},
	} {
		if tc.err == nil || keel.KindOf(tc.err) != tc.kind {
			t.Errorf("%s: %v, want kind %v", name, tc.err, tc.kind)
			continue
		}
		if msg := tc.err.Error(); !strings.HasPrefix(msg, "project: ") || strings.Count(msg, "project: ") != 1 {
			t.Errorf("%s: %q does not start with \"project: \" once", name, msg)
		}
	}
	if fe := keel.FieldErrors(errInvalid); len(fe) != 1 || fe[0].Field != "Name" || strings.Contains(fe[0].Rule, "project: ") {
		t.Errorf("field errors of a prefixed error: %+v", fe)
	}
	boom := errors.New("policy: boom")
	r, err := e.c.Register(nil, nil)
	if err == nil || r != nil || !strings.HasPrefix(err.Error(), "project: ") || strings.Count(err.Error(), "project: ") != 1 {
		t.Errorf("register nil: %v", err)
	}
	reg, err := e.c.Register(storage.Sub(e.raw, "svc/"), func(context.Context, string, storage.Store) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, storage.Tx, Orgs) error { return boom }
	if err := reg.Update(root(), fn); !errors.Is(err, boom) || err.Error() != "policy: boom" {
		t.Errorf("a service's error through Update: %v", err)
	}
	if err := reg.View(root(), fn); !errors.Is(err, boom) || err.Error() != "policy: boom" {
		t.Errorf("a service's error through View: %v", err)
	}
	// A purge that fails through its guarded store: DeleteOrganization
	// names it once, in its own message.
	if _, err := e.c.Register(storage.Sub(e.raw, "svc/"), func(ctx context.Context, _ string, store storage.Store) error {
		return store.Update(ctx, func(context.Context, storage.Tx) error { return boom })
	}); err != nil {
		t.Fatal(err)
	}
	err = e.c.DeleteOrganization(root(), "acme")
	if msg := fmt.Sprint(err); !errors.Is(err, boom) || !strings.HasPrefix(msg, "project: delete organization") || strings.Count(msg, "project: ") != 1 {
		t.Errorf("a failed purge: %q", msg)
	}
}
