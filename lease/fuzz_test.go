package lease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// FuzzGetID feeds arbitrary lease ids and prefixes to the operations
// that take one: none may panic, and each fails only with the kinds its
// contract names.
func FuzzGetID(f *testing.F) {
	e := newEnv(f, everystore.Mem, nil, nil)
	l := e.issue(f, IssueRequest{TTL: time.Hour, Renewable: true})
	for _, s := range []string{"", "ldap/", "ldap/creds/app", l.ID, l.ID + "/", "\x00", "ldap//x", "lease/id/x", strings.Repeat("a/", 100)} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, id string) {
		allowed := func(op string, err error, kinds ...keel.Kind) {
			if err == nil {
				return
			}
			for _, k := range kinds {
				if keel.KindOf(err) == k {
					return
				}
			}
			t.Fatalf("%s(%q): %v (kind %v)", op, id, err, keel.KindOf(err))
		}
		_, err := e.m.Get(ctx, id)
		allowed("Get", err, keel.KindNotFound, keel.KindInvalid)
		_, err = e.m.List(ctx, id, keel.ListRequest{})
		allowed("List", err)
		_, err = e.m.List(ctx, "ldap/", keel.ListRequest{Cursor: id})
		allowed("List with a cursor", err)
		_, err = e.m.Renew(ctx, id, time.Minute)
		allowed("Renew", err, keel.KindNotFound, keel.KindInvalid)
		if id != l.ID {
			allowed("Revoke", e.m.Revoke(ctx, id, false), keel.KindInvalid)
		}
	})
}

// FuzzIssuePath issues leases for arbitrary paths: no panic; a path that
// is accepted gives an id made of it, that Get and List find.
func FuzzIssuePath(f *testing.F) {
	e := newEnv(f, everystore.Mem, nil, nil)
	for _, s := range []string{"ldap/creds/app", "ldap", "ldap/", "ldap/a/../b", "ldap/é/ü", "ldap/a b", "ldap/\x7f", "ldap/" + strings.Repeat("x", 5000)} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, p string) {
		l, err := e.m.issue(ctx, IssueRequest{Path: p, TTL: time.Hour})
		if err != nil {
			if k := keel.KindOf(err); k != keel.KindInvalid && k != keel.KindTooLarge {
				t.Fatalf("Issue(%q): %v", p, err)
			}
			return
		}
		if !strings.HasPrefix(l.ID, p+"/") || len(l.ID) != len(p)+1+idRandLen || l.Path != p || pathOf(l.ID) != p {
			t.Fatalf("Issue(%q) gave id %q path %q", p, l.ID, l.Path)
		}
		if _, err := e.m.Get(ctx, l.ID); err != nil {
			t.Fatalf("Get(%q): %v", l.ID, err)
		}
		names, err := listAll(ctx, e.m, p)
		if err != nil || !containsString(names, l.ID[len(p)+1:]) {
			t.Fatalf("List(%q) = %q, %v; want it to hold the new lease", p, names, err)
		}
		if err := e.m.Revoke(ctx, l.ID, true); err != nil {
			t.Fatal(err)
		}
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
