package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/lease"
)

// wantPrefixOnce fails unless err's message starts with "ldapengine: "
// and names the package only there, err is of kind want, and, for a
// broken rule, its field errors are there with rules that do not name the
// package (adapters show the rules, as Vault words them).
func wantPrefixOnce(t *testing.T, name string, err error, want keel.Kind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "ldapengine: ") || strings.Count(msg, "ldapengine: ") != 1 {
		t.Errorf("%s: message %q does not start with \"ldapengine: \" exactly once", name, msg)
	}
	if got := keel.KindOf(err); got != want {
		t.Errorf("%s: kind %v, want %v (%q)", name, got, want, msg)
	}
	if want != keel.KindInvalid {
		return
	}
	fes := keel.FieldErrors(err)
	if len(fes) == 0 && !errors.Is(err, keel.KindInvalid) {
		t.Errorf("%s: no field errors in %q", name, msg)
	}
	for _, fe := range fes {
		if strings.Contains(fe.Rule, "ldapengine") {
			t.Errorf("%s: the rule of %s names the package: %q", name, fe.Field, fe.Rule)
		}
	}
}

// TestErrorMessagesPrefix drives failing operations of every part of the
// engine (configuration, static and dynamic roles, library sets and their
// lending, leases, the worker, the LDAP directory) and checks that each
// error names the package once, at the start, with its kind and field
// errors (issue 31).
func TestErrorMessagesPrefix(t *testing.T) {
	ctx := context.Background()
	type check struct {
		name string
		err  error
		kind keel.Kind
	}
	var checks []check
	add := func(name string, err error, kind keel.Kind) { checks = append(checks, check{name, err, kind}) }

	// New and the configuration.
	_, err := New(nil, "vault", "", nil)
	add("New: nil store, bad flavor, no mount", err, keel.KindInvalid)
	v := newEnv(t, everystore.Mem, FlavorLDAP, nil)
	_, err = v.e.GetConfig(ctx)
	add("GetConfig: not configured", err, keel.KindNotFound)
	add("PutConfig: broken rules", v.e.PutConfig(ctx, Config{URL: "http://x", Length: -1}), keel.KindInvalid)
	add("RotateRoot: not configured", v.e.RotateRoot(ctx), keel.KindNotFound)
	o := newEnv(t, everystore.Mem, FlavorOpenLDAP, nil)
	add("PutConfig: ldap-only field on openldap", o.e.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "pw", UserDN: "ou=x"}), keel.KindInvalid)
	v.configure(t)

	// Static roles.
	_, err = v.e.GetStaticRole(ctx, "-bad")
	add("GetStaticRole: bad name", err, keel.KindInvalid)
	_, err = v.e.GetStaticRole(ctx, "missing")
	add("GetStaticRole: missing", err, keel.KindNotFound)
	_, err = v.e.ListStaticRoles(ctx, "a//b", keel.ListRequest{})
	add("ListStaticRoles: bad path", err, keel.KindInvalid)
	_, err = v.e.ListStaticRoles(ctx, "", keel.ListRequest{Cursor: "a/b"})
	add("ListStaticRoles: bad cursor", err, keel.KindInvalid)
	add("PutStaticRole: broken rules", v.e.PutStaticRole(ctx, "r", StaticRoleRequest{RotationPeriod: time.Millisecond}), keel.KindInvalid)
	add("PutStaticRole: no such user", v.e.PutStaticRole(ctx, "r", StaticRoleRequest{Username: "nobody", RotationPeriod: time.Hour}), keel.KindInvalid)
	add("PutStaticRole: no such entry", v.e.PutStaticRole(ctx, "r", StaticRoleRequest{Username: "x", DN: "uid=x,dc=example,dc=org", RotationPeriod: time.Hour}), keel.KindInvalid)
	if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	add("PutStaticRole: entry of another role", v.e.PutStaticRole(ctx, "alice2", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}), keel.KindConflict)
	add("PutStaticRole: changed username", v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "bob"}), keel.KindInvalid)
	add("RotateRole: missing", v.e.RotateRole(ctx, "missing"), keel.KindNotFound)
	v.dir.SetDown(true)
	add("RotateRole: directory down", v.e.RotateRole(ctx, "alice"), keel.KindUnavailable)
	add("RotateRoot: directory down (not applied)", v.e.RotateRoot(ctx), keel.KindUnavailable)
	v.dir.SetDown(false)
	v.dir.LoseReplies(aliceDN, true)
	add("RotateRole: reply lost", v.e.RotateRole(ctx, "alice"), keel.KindUnavailable)
	_, err = v.e.GetStaticCred(ctx, "alice")
	add("GetStaticCred: change being settled", err, keel.KindUnavailable)
	v.dir.LoseReplies(aliceDN, false)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = v.e.Step(canceled, v.clock.Now())
	add("Step: canceled", err, keel.KindCanceled)

	// Dynamic roles and credentials.
	d := newDynEnv(t, everystore.Mem, FlavorLDAP, nil)
	add("PutDynamicRole: broken rules", d.e.PutDynamicRole(ctx, "r", DynamicRoleRequest{CreationLDIF: strp("dn: x\nfoo"), DefaultTTL: libPtr(-time.Second)}), keel.KindInvalid)
	add("PutDynamicRole: bad name", d.e.PutDynamicRole(ctx, "-bad", DynamicRoleRequest{}), keel.KindInvalid)
	_, err = d.e.GetDynamicRole(ctx, "missing")
	add("GetDynamicRole: missing", err, keel.KindNotFound)
	_, err = d.e.CreateDynamicCred(asCaller("app"), "missing")
	add("CreateDynamicCred: missing role", err, keel.KindNotFound)
	d.putTestRole(t, "app", nil)
	_, err = d.e.CreateDynamicCred(asCaller("bad\x00name"), "app")
	add("CreateDynamicCred: bad display name", err, keel.KindInvalid)
	d.dir.FailApply(groupDN, errors.New("busy"))
	_, err = d.e.CreateDynamicCred(asCaller("app"), "app")
	add("CreateDynamicCred: creation fails, rolled back", err, keel.KindUnavailable)
	d.dir.FailApply(groupDN, nil)
	d.putTestRole(t, "fixed", func(r *DynamicRoleRequest) { r.UsernameTemplate = strp("fixed-user") })
	d.dir.FailApply(userDN("fixed-user"), errors.New("busy"))
	_, err = d.e.CreateDynamicCred(asCaller("app"), "fixed")
	add("CreateDynamicCred: creation and rollback fail", err, keel.KindUnavailable)
	d.dir.FailApply(userDN("fixed-user"), nil)
	_, err = o.e.CreateDynamicCred(asCaller("app"), "app")
	add("CreateDynamicCred: openldap flavor", err, keel.KindInvalid)
	noLeases := newEnv(t, everystore.Mem, FlavorLDAP, nil)
	_, err = noLeases.e.CreateDynamicCred(asCaller("app"), "app")
	add("CreateDynamicCred: no lease manager", err, keel.KindUnavailable)
	rv := revoker{d.e}
	add("Revoke: lease of another mount", rv.Revoke(ctx, lease.Lease{ID: "x", Path: "other/creds/app"}), keel.KindInvalid)
	add("Revoke: no deletion LDIF", rv.Revoke(ctx, lease.Lease{ID: "x", Path: "ldap/creds/app", Data: []byte(`{}`)}), keel.KindInternal)
	add("Renew: path of no secret", rv.Renew(ctx, lease.Lease{ID: "x", Path: "ldap/config"}, time.Hour), keel.KindInvalid)

	// Library sets and lending.
	deny := &libDenyAuth{}
	deny.reset()
	l := newLibEnv(t, everystore.Mem, 3, libOptions{auth: deny})
	add("PutLibrarySet: broken rules", l.e.PutLibrarySet(libRoot(), "team", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "svc0", ""}, TTL: libPtr(-time.Second)}), keel.KindInvalid)
	add("PutLibrarySet: name of another route", l.e.PutLibrarySet(libRoot(), "manage/team", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}}), keel.KindInvalid)
	add("PutLibrarySet: no such account", l.e.PutLibrarySet(libRoot(), "team", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "nobody"}}), keel.KindInvalid)
	l.putSet(t, "team", "svc0", "svc1")
	add("PutLibrarySet: account of another set", l.e.PutLibrarySet(libRoot(), "other", LibrarySetRequest{ServiceAccountNames: []string{"svc1"}}), keel.KindConflict)
	_, err = l.e.GetLibrarySet(libRoot(), "missing")
	add("GetLibrarySet: missing", err, keel.KindNotFound)
	_, err = l.e.GetLibraryStatus(libRoot(), "missing")
	add("GetLibraryStatus: missing", err, keel.KindNotFound)
	_, err = l.e.CheckOut(libRoot(), "team", CheckOutRequest{TTL: -time.Second})
	add("CheckOut: negative TTL", err, keel.KindInvalid)
	_, err = l.e.CheckOut(context.Background(), "team", CheckOutRequest{})
	add("CheckOut: no borrower", err, keel.KindInvalid)
	alice := libCaller("tok-a", "ent-a")
	co, err := l.e.CheckOut(alice, "team", CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.CheckOut(alice, "team", CheckOutRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = l.e.CheckOut(alice, "team", CheckOutRequest{})
	add("CheckOut: none available", err, keel.KindConflict)
	if !errors.Is(err, ErrNoAccountAvailable) {
		t.Errorf("CheckOut: %v is not ErrNoAccountAvailable", err)
	}
	_, err = l.e.CheckIn(libCaller("tok-b", "ent-b"), "team", CheckInRequest{ServiceAccountNames: []string{co.ServiceAccountName}})
	add("CheckIn: another borrower's account", err, keel.KindForbidden)
	_, err = l.e.CheckIn(alice, "team", CheckInRequest{ServiceAccountNames: []string{"nobody"}})
	add("CheckIn: not an account of the set", err, keel.KindInvalid)
	_, err = l.e.CheckIn(alice, "team", CheckInRequest{})
	add("CheckIn: several checked out", err, keel.KindInvalid)
	add("DeleteLibrarySet: account checked out", l.e.DeleteLibrarySet(libRoot(), "team"), keel.KindConflict)
	if _, err := l.e.CheckIn(alice, "team", CheckInRequest{ServiceAccountNames: []string{co.ServiceAccountName}}); err != nil {
		t.Fatal(err)
	}
	add("Renew: check-out already checked in", revoker{l.e}.Renew(ctx, co.Lease, time.Hour), keel.KindInvalid)
	add("Revoke: no check-out data", revoker{l.e}.Revoke(ctx, lease.Lease{ID: "x", Path: "ldap/library/team/check-out"}), keel.KindInvalid)
	deny.reset("ldap/config")
	_, err = l.e.GetConfig(libRoot())
	add("GetConfig: forbidden", err, keel.KindForbidden)
	deny.reset()
	_, err = o.e.ListLibrarySets(ctx, "", keel.ListRequest{})
	add("ListLibrarySets: openldap flavor", err, keel.KindInvalid)
	add("ErrNoAccountAvailable", ErrNoAccountAvailable, keel.KindConflict)

	// The LDAP directory, with no server to reach.
	down := Conn{URLs: []string{"ldap://127.0.0.1:1"}, BindDN: bindDN, BindPass: "pw", ConnectionTimeout: time.Second}
	add("LDAP.Bind: no server", LDAP{}.Bind(ctx, down, bindDN, "pw"), keel.KindUnavailable)
	_, err = LDAP{}.FindDN(ctx, down, "dc=x", "uid", "x")
	add("LDAP.FindDN: no server", err, keel.KindUnavailable)
	add("LDAP.SetPassword: no server", LDAP{}.SetPassword(ctx, down, aliceDN, "pw"), keel.KindUnavailable)
	add("LDAP.Apply: no server", LDAP{}.Apply(ctx, down, []Change{{Type: ChangeDelete, DN: aliceDN}}, true), keel.KindUnavailable)
	add("LDAP.EntryExists: canceled", LDAP{}.EntryExists(canceled, down, aliceDN), keel.KindCanceled)
	badTLS := down
	badTLS.Certificate = "not PEM"
	add("LDAP.SetPassword: bad certificate", LDAP{}.SetPassword(ctx, badTLS, aliceDN, "pw"), keel.KindInvalid)
	ce := &ChangeError{Index: 1, Type: ChangeAdd, DN: aliceDN, Err: LDAP{}.SetPassword(ctx, down, aliceDN, "pw")}
	add("ChangeError", ce, keel.KindUnavailable)

	for _, c := range checks {
		wantPrefixOnce(t, c.name, c.err, c.kind)
	}
	if t.Failed() {
		n := 0
		for _, c := range checks {
			if c.err != nil && strings.HasPrefix(c.err.Error(), "ldapengine: ") && strings.Count(c.err.Error(), "ldapengine: ") == 1 {
				n++
			}
		}
		t.Logf("%d of %d errors start with \"ldapengine: \" exactly once", n, len(checks))
	}
}

// TestErrorMessagesGuard parses the package's files (not the tests) and
// checks the rules of errors.go, so that a new error cannot miss the
// package's prefix (issue 31):
//
//   - the format of fmt.Errorf and the text of errors.New are string
//     literals that start with "ldapengine: " and name it once; the
//     package has no other form ("%w"-only formats, such as
//     fmt.Errorf("%w: %w", err, ErrNotApplied), are notApplied: a
//     wrapped message may carry the prefix already, and would name it
//     in the middle);
//   - the context of wrapf does not name the package (wrapf puts the
//     prefix in front);
//   - keel.Invalid is called by invalid only, keel.Validation.Err by
//     validation only, so that a broken rule gets the prefix in front of
//     its message and not in its rule;
//   - errors.Join is not called (join is: one prefix, not one a line),
//     nor multierror.Append on nil (its list would lack the prefix:
//     listFormat);
//   - every exported function that returns an error (but Unwrap) begins
//     with defer prefixErr(&err), which adds the prefix to the errors of
//     other packages that it passes on.
func TestErrorMessagesGuard(t *testing.T) {
	if checked := keeltest.CheckDeferredPrefix(t); checked < 30 {
		t.Errorf("%d exported functions returning an error checked, want every one", checked)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, _ := decl.(*ast.FuncDecl)
			funcName := ""
			if fn != nil {
				funcName = fn.Name.Name
			}
			validations := validationVars(decl)
			ast.Inspect(decl, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				pos := fset.Position(call.Pos())
				switch callee(call) {
				case "fmt.Errorf", "errors.New":
					checked++
					s, ok := stringLit(call.Args[0])
					if !ok {
						t.Errorf("%s: %s with a message that is not a string literal", pos, callee(call))
					} else if !strings.HasPrefix(s, "ldapengine: ") || strings.Count(s, "ldapengine: ") != 1 {
						t.Errorf("%s: %s(%q) does not start with \"ldapengine: \" exactly once", pos, callee(call), s)
					}
				case "wrapf":
					checked++
					if s, ok := stringLit(call.Args[1]); !ok || strings.Contains(s, "ldapengine") {
						t.Errorf("%s: the context of wrapf is not a string literal without the package's name", pos)
					}
				case "keel.Invalid":
					checked++
					if funcName != "invalid" {
						t.Errorf("%s: keel.Invalid in %s: use invalid", pos, funcName)
					}
				case "errors.Join":
					t.Errorf("%s: errors.Join: use join", pos)
				case "multierror.Append":
					if id, ok := call.Args[0].(*ast.Ident); ok && id.Name == "nil" {
						t.Errorf("%s: multierror.Append(nil, …): start from &multierror.Error{ErrorFormat: listFormat}", pos)
					}
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Err" {
					if id, ok := sel.X.(*ast.Ident); ok && validations[id.Name] {
						checked++
						if funcName != "validation" {
							t.Errorf("%s: %s.Err() of a keel.Validation in %s: use validation", pos, id.Name, funcName)
						}
					}
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d errors only: the guard finds no longer what it checks", checked)
	}
}

// callee is the name of the function call calls: "fmt.Errorf", "wrapf".
func callee(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if id, ok := f.X.(*ast.Ident); ok {
			return id.Name + "." + f.Sel.Name
		}
	}
	return ""
}

// stringLit returns the value of the string literal e.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// validationVars returns the names that decl declares of type
// keel.Validation or *keel.Validation (variables and parameters).
func validationVars(decl ast.Decl) map[string]bool {
	isValidation := func(e ast.Expr) bool {
		if st, ok := e.(*ast.StarExpr); ok {
			e = st.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		return ok && fmt.Sprint(sel.X) == "keel" && sel.Sel.Name == "Validation"
	}
	names := map[string]bool{}
	ast.Inspect(decl, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			if n.Type != nil && isValidation(n.Type) {
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
		case *ast.Field:
			if isValidation(n.Type) {
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}
