package keel_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/keelhq/keel"
)

var (
	_ keel.Authorizer = keel.AllowAll{}
	_ keel.Authorizer = (*keel.RuleAuthorizer)(nil)
	_ keel.Folder     = (*keel.RuleAuthorizer)(nil)
)

func TestAllowAll(t *testing.T) {
	tests := []struct {
		name     string
		p        keel.Principal
		c        keel.Capability
		resource string
	}{
		{"anonymous read", keel.Principal{}, keel.CapRead, "secret/a"},
		{"no policies sudo", keel.Principal{ID: "bob"}, keel.CapSudo, "sys/raw"},
		{"deny capability", keel.Principal{ID: "bob", Policies: []string{"nothing"}}, keel.CapDeny, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := (keel.AllowAll{}).Authorize(context.Background(), tc.p, tc.c, tc.resource); err != nil {
				t.Errorf("AllowAll.Authorize = %v, want nil", err)
			}
			ctx := keel.WithPrincipal(context.Background(), tc.p)
			if err := keel.Authorize(ctx, keel.AllowAll{}, tc.c, tc.resource); err != nil {
				t.Errorf("keel.Authorize(AllowAll) = %v, want nil", err)
			}
		})
	}
}

func TestAuthorizeNilAuthorizerAllows(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
	}{
		{"no principal", context.Background()},
		{"principal without policies", keel.WithPrincipal(context.Background(), keel.Principal{ID: "bob"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := keel.Authorize(tc.ctx, nil, keel.CapDelete, "secret/a"); err != nil {
				t.Errorf("Authorize(nil authorizer) = %v, want nil", err)
			}
		})
	}
}

// TestRuleAuthorizerPathMatching checks the glob of one rule against
// resources, with Vault's semantics: a trailing "*" is a string prefix, "+"
// is exactly one whole segment, anything else matches itself.
func TestRuleAuthorizerPathMatching(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		resource string
		want     bool
	}{
		{"exact", "secret/app", "secret/app", true},
		{"exact: longer", "secret/app", "secret/app/db", false},
		{"exact: trailing slash", "secret/app", "secret/app/", false},
		{"exact: shorter", "secret/app", "secret/ap", false},
		{"exact: longer last segment", "secret/app", "secret/apps", false},
		{"exact: parent", "secret/app", "secret", false},
		{"exact: other", "secret/app", "other/app", false},

		{"dir glob: the directory itself", "secret/*", "secret/", true},
		{"dir glob: child", "secret/*", "secret/a", true},
		{"dir glob: grandchild", "secret/*", "secret/a/b", true},
		{"dir glob: without slash", "secret/*", "secret", false},
		{"dir glob: shorter", "secret/*", "secre", false},
		{"dir glob: longer name", "secret/*", "secretx", false},
		{"dir glob: longer name with child", "secret/*", "secretx/a", false},
		{"dir glob: not anchored elsewhere", "secret/*", "other/secret/a", false},

		{"name glob: longer name", "secret*", "secretx", true},
		{"name glob: itself", "secret*", "secret", true},
		{"name glob: child", "secret*", "secret/a/b", true},
		{"name glob: shorter", "secret*", "secre", false},
		{"partial segment glob: matches across segments", "secret/a*", "secret/abc/d", true},
		{"partial segment glob: other", "secret/a*", "secret/b", false},

		{"star alone: anything", "*", "any/thing/at/all", true},
		{"star alone: empty", "*", "", true},

		{"plus: one segment", "identity/group/+/x", "identity/group/id/x", true},
		{"plus: no segment", "identity/group/+/x", "identity/group/x", false},
		{"plus: two segments", "identity/group/+/x", "identity/group/a/b/x", false},
		{"plus: wrong tail", "identity/group/+/x", "identity/group/id/y", false},
		{"plus: longer", "identity/group/+/x", "identity/group/id/x/y", false},
		{"plus first", "+/b", "a/b", true},
		{"plus first: wrong tail", "+/b", "a/c", false},
		{"plus last", "sys/+/+", "sys/a/b", true},
		{"plus last: too short", "sys/+/+", "sys/a", false},
		{"plus last: too long", "sys/+/+", "sys/a/b/c", false},
		{"plus then glob", "a/+/c/*", "a/x/c/d/e", true},
		{"plus then glob: directory", "a/+/c/*", "a/x/c/", true},
		{"plus then glob: without slash", "a/+/c/*", "a/x/c", false},
		{"plus then glob: two segments", "a/+/c/*", "a/x/y/c/d", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
				"p": {{Path: tc.path, Capabilities: []keel.Capability{keel.CapRead}}},
			})
			if err != nil {
				t.Fatalf("NewRuleAuthorizer(%q) = %v", tc.path, err)
			}
			p := keel.Principal{ID: "alice", Policies: []string{"p"}}
			err = ra.Authorize(context.Background(), p, keel.CapRead, tc.resource)
			checkDecision(t, err, tc.want)
		})
	}
}

func TestRuleAuthorizerDecisions(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"readers": {
			{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}},
		},
		"app-writer": {
			{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "secret/app", Capabilities: []keel.Capability{keel.CapUpdate}},
		},
		"creators": {
			{Path: "secret/*", Capabilities: []keel.Capability{keel.CapCreate}},
		},
		"no-prod": {
			{Path: "secret/prod/*", Capabilities: []keel.Capability{keel.CapDeny}},
		},
		"self-deny": {
			{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "secret/locked", Capabilities: []keel.Capability{keel.CapRead, keel.CapDeny}},
		},
		"empty": nil,
	})
	if err != nil {
		t.Fatalf("NewRuleAuthorizer = %v", err)
	}

	tests := []struct {
		name     string
		policies []string
		c        keel.Capability
		resource string
		want     bool
	}{
		{"listed capability", []string{"readers"}, keel.CapRead, "secret/a", true},
		{"other listed capability", []string{"readers"}, keel.CapList, "secret/a", true},
		{"capability not listed", []string{"readers"}, keel.CapDelete, "secret/a", false},
		{"capability not listed: sudo", []string{"readers"}, keel.CapSudo, "secret/a", false},
		{"path not matched", []string{"readers"}, keel.CapRead, "sys/a", false},
		{"asking for deny itself", []string{"readers"}, keel.CapDeny, "secret/a", false},
		{"no policies", nil, keel.CapRead, "secret/a", false},
		{"unknown policy", []string{"nonesuch"}, keel.CapRead, "secret/a", false},
		{"policy without rules", []string{"empty"}, keel.CapRead, "secret/a", false},
		{"unknown policy beside a known one", []string{"nonesuch", "readers"}, keel.CapRead, "secret/a", true},
		{"second rule of a policy", []string{"app-writer"}, keel.CapUpdate, "secret/app", true},
		{"second rule of a policy: other path", []string{"app-writer"}, keel.CapUpdate, "secret/other", false},
		{"grants add up across policies", []string{"readers", "creators"}, keel.CapCreate, "secret/a", true},
		{"root: anything", []string{keel.RootPolicy}, keel.CapSudo, "sys/raw/anything", true},
		{"root: empty resource", []string{keel.RootPolicy}, keel.CapDelete, "", true},
		{"root beside unknown", []string{"nonesuch", keel.RootPolicy}, keel.CapManagePolicies, "organizations/acme", true},
		{"root beats deny", []string{"no-prod", keel.RootPolicy}, keel.CapRead, "secret/prod/db", true},
		{"deny wins over grant of another policy", []string{"readers", "no-prod"}, keel.CapRead, "secret/prod/db", false},
		{"deny wins whatever the policy order", []string{"no-prod", "readers"}, keel.CapRead, "secret/prod/db", false},
		{"deny wins over every capability", []string{"readers", "no-prod"}, keel.CapList, "secret/prod/db", false},
		{"deny only where it matches", []string{"readers", "no-prod"}, keel.CapRead, "secret/dev/db", true},
		{"deny alone grants nothing", []string{"no-prod"}, keel.CapRead, "secret/dev/db", false},
		{"deny within the same policy", []string{"self-deny"}, keel.CapRead, "secret/locked", false},
		{"same policy grants elsewhere", []string{"self-deny"}, keel.CapRead, "secret/open", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := keel.Principal{ID: "alice", Policies: tc.policies}
			err := ra.Authorize(context.Background(), p, tc.c, tc.resource)
			checkDecision(t, err, tc.want)
			if err != nil {
				msg := err.Error()
				for _, s := range []string{"alice", string(tc.c), tc.resource} {
					if !strings.Contains(msg, s) {
						t.Errorf("error %q does not mention %q", msg, s)
					}
				}
			}
		})
	}
}

func TestRuleAuthorizerAnonymous(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"readers": {{Path: "*", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = ra.Authorize(context.Background(), keel.Principal{}, keel.CapRead, "secret/a")
	checkDecision(t, err, false)
	if err != nil && !strings.Contains(err.Error(), "anonymous caller") {
		t.Errorf("error %q does not name the anonymous caller", err)
	}
}

func TestNewRuleAuthorizerRejects(t *testing.T) {
	read := []keel.Capability{keel.CapRead}
	tests := []struct {
		name     string
		policies map[string][]keel.Rule
		want     []keel.FieldError // Rule holds a substring of the rule
	}{
		{
			"empty path",
			map[string][]keel.Rule{"p": {{Path: "", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Path`, Rule: "is empty"}},
		},
		{
			"star in the middle",
			map[string][]keel.Rule{"p": {{Path: "secret/a", Capabilities: read}, {Path: "a/*/b", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][1].Path`, Rule: `"*" is allowed only at the end`}},
		},
		{
			"double star at the end",
			map[string][]keel.Rule{"p": {{Path: "a/**", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Path`, Rule: `"*" is allowed only at the end`}},
		},
		{
			"plus inside a segment",
			map[string][]keel.Rule{"p": {{Path: "x/a+b/c", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Path`, Rule: `"+" must be a whole segment`}},
		},
		{
			"plus at the end of a segment",
			map[string][]keel.Rule{"p": {{Path: "x/a+", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Path`, Rule: `"+" must be a whole segment`}},
		},
		{
			"plus star",
			map[string][]keel.Rule{"p": {{Path: "x/+*", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Path`, Rule: `"+*" is not a pattern`}},
		},
		{
			"nil capabilities",
			map[string][]keel.Rule{"p": {{Path: "secret/*"}}},
			[]keel.FieldError{{Field: `Policies["p"][0].Capabilities`, Rule: "no capabilities"}},
		},
		{
			"empty capabilities",
			map[string][]keel.Rule{"p": {{Path: "secret/a", Capabilities: read}, {Path: "secret/b", Capabilities: read}, {Path: "secret/*", Capabilities: []keel.Capability{}}}},
			[]keel.FieldError{{Field: `Policies["p"][2].Capabilities`, Rule: "no capabilities"}},
		},
		{
			"policy named root",
			map[string][]keel.Rule{keel.RootPolicy: {{Path: "*", Capabilities: read}}},
			[]keel.FieldError{{Field: `Policies["root"]`, Rule: "cannot be redefined"}},
		},
		{
			"every problem of a policy, in order",
			map[string][]keel.Rule{"p": {{Path: ""}, {Path: "ok", Capabilities: read}, {Path: "a*b", Capabilities: read}}},
			[]keel.FieldError{
				{Field: `Policies["p"][0].Path`, Rule: "is empty"},
				{Field: `Policies["p"][0].Capabilities`, Rule: "no capabilities"},
				{Field: `Policies["p"][2].Path`, Rule: `"*" is allowed only at the end`},
			},
		},
		{
			"every policy, in the order of their names",
			map[string][]keel.Rule{"b": {{Path: "x*y", Capabilities: read}}, "a b": {{Path: "", Capabilities: read}}, keel.RootPolicy: nil},
			[]keel.FieldError{
				{Field: `Policies["a b"][0].Path`, Rule: "is empty"},
				{Field: `Policies["b"][0].Path`, Rule: `"x*y": "*" is allowed only at the end`},
				{Field: `Policies["root"]`, Rule: "cannot be redefined"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ra, err := keel.NewRuleAuthorizer(tc.policies)
			if err == nil {
				t.Fatal("NewRuleAuthorizer accepted the policies")
			}
			if ra != nil {
				t.Errorf("NewRuleAuthorizer returned an authorizer with its error")
			}
			if got := keel.KindOf(err); got != keel.KindInvalid {
				t.Errorf("KindOf(%v) = %v, want %v", err, got, keel.KindInvalid)
			}
			if !errors.Is(err, keel.KindInvalid) {
				t.Errorf("errors.Is(%v, KindInvalid) = false", err)
			}
			got := keel.FieldErrors(err)
			if len(got) != len(tc.want) {
				t.Fatalf("FieldErrors = %+v, want %d matching %+v", deref(got), len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if got[i].Field != w.Field {
					t.Errorf("FieldErrors[%d].Field = %q, want %q", i, got[i].Field, w.Field)
				}
				if !strings.Contains(got[i].Rule, w.Rule) {
					t.Errorf("FieldErrors[%d].Rule = %q, want it to contain %q", i, got[i].Rule, w.Rule)
				}
			}
		})
	}
}

func TestNewRuleAuthorizerAccepts(t *testing.T) {
	read := []keel.Capability{keel.CapRead}
	tests := []struct {
		name     string
		policies map[string][]keel.Rule
	}{
		{"nil", nil},
		{"empty policy", map[string][]keel.Rule{"p": nil}},
		{"star alone", map[string][]keel.Rule{"p": {{Path: "*", Capabilities: read}}}},
		{"plus alone", map[string][]keel.Rule{"p": {{Path: "+", Capabilities: read}}}},
		{"plus and star", map[string][]keel.Rule{"p": {{Path: "a/+/b/*", Capabilities: read}}}},
		{"name glob", map[string][]keel.Rule{"p": {{Path: "secret*", Capabilities: read}}}},
		{"policy whose name contains root", map[string][]keel.Rule{"rooted": {{Path: "a", Capabilities: read}}}},
		{"several policies", map[string][]keel.Rule{
			"a": {{Path: "x", Capabilities: read}},
			"b": {{Path: "y/*", Capabilities: []keel.Capability{keel.CapDeny}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ra, err := keel.NewRuleAuthorizer(tc.policies)
			if err != nil {
				t.Fatalf("NewRuleAuthorizer = %v, want nil", err)
			}
			if ra == nil {
				t.Fatal("NewRuleAuthorizer returned a nil authorizer and no error")
			}
		})
	}
}

// The authorizer is immutable: changing the caller's rules afterwards does
// not change its decisions.
func TestRuleAuthorizerCopiesRules(t *testing.T) {
	caps := []keel.Capability{keel.CapRead}
	policies := map[string][]keel.Rule{"p": {{Path: "secret/*", Capabilities: caps}}}
	ra, err := keel.NewRuleAuthorizer(policies)
	if err != nil {
		t.Fatal(err)
	}
	caps[0] = keel.CapDeny
	policies["p"][0].Path = "other/*"
	policies["q"] = []keel.Rule{{Path: "*", Capabilities: []keel.Capability{keel.CapDelete}}}

	p := keel.Principal{ID: "alice", Policies: []string{"p", "q"}}
	checkDecision(t, ra.Authorize(context.Background(), p, keel.CapRead, "secret/a"), true)
	checkDecision(t, ra.Authorize(context.Background(), p, keel.CapDelete, "secret/a"), false)
}

func TestAuthorizeReadsPrincipalFromContext(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"readers": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"principal with the policy", keel.WithPrincipal(context.Background(), keel.Principal{ID: "alice", Policies: []string{"readers"}}), true},
		{"principal without the policy", keel.WithPrincipal(context.Background(), keel.Principal{ID: "bob", Policies: []string{"writers"}}), false},
		{"no principal", context.Background(), false},
		{"root principal", keel.WithPrincipal(context.Background(), keel.Principal{ID: "admin", Policies: []string{keel.RootPolicy}}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, keel.Authorize(tc.ctx, ra, keel.CapRead, "secret/a"), tc.want)
		})
	}
}

func TestAuthorizePassesItsArguments(t *testing.T) {
	want := keel.Principal{ID: "alice", Policies: []string{"p"}, Meta: map[string]string{"k": "v"}}
	ctx := keel.WithPrincipal(context.Background(), want)
	rec := &recordingAuthorizer{err: keel.KindForbidden}

	err := keel.Authorize(ctx, rec, keel.CapUpdate, "secret/a")
	if !errors.Is(err, keel.KindForbidden) {
		t.Errorf("Authorize = %v, want the authorizer's error", err)
	}
	if rec.calls != 1 {
		t.Fatalf("authorizer called %d times, want 1", rec.calls)
	}
	if rec.ctx != ctx {
		t.Error("authorizer did not receive the caller's context")
	}
	if !reflect.DeepEqual(rec.p, want) {
		t.Errorf("authorizer got principal %+v, want %+v", rec.p, want)
	}
	if rec.c != keel.CapUpdate || rec.resource != "secret/a" {
		t.Errorf("authorizer got (%q, %q), want (%q, %q)", rec.c, rec.resource, keel.CapUpdate, "secret/a")
	}

	rec = &recordingAuthorizer{}
	if err := keel.Authorize(context.Background(), rec, keel.CapRead, "x"); err != nil {
		t.Errorf("Authorize = %v, want nil", err)
	}
	if !reflect.DeepEqual(rec.p, keel.Principal{}) {
		t.Errorf("without a principal in ctx, authorizer got %+v, want the anonymous principal", rec.p)
	}
}

func TestRuleAuthorizerConcurrentUse(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"readers": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead}}},
		"no-prod": {{Path: "secret/prod/*", Capabilities: []keel.Capability{keel.CapDeny}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := keel.Principal{ID: "alice", Policies: []string{"readers", "no-prod"}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if err := ra.Authorize(context.Background(), p, keel.CapRead, "secret/dev/a"); err != nil {
					errs <- err
					return
				}
				if err := ra.Authorize(context.Background(), p, keel.CapRead, "secret/prod/a"); err == nil {
					errs <- errors.New("secret/prod/a allowed")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRuleAuthorizerFoldUnder: the view of FoldUnder decides on a resource
// under the prefix as if each rule's path beyond the prefix were folded,
// wildcards included, and on any other resource as the authorizer does;
// the authorizer itself is left as it was.
func TestRuleAuthorizerFoldUnder(t *testing.T) {
	const prefix = "identity/group/name/"
	tests := []struct {
		name           string
		path, resource string
		view, original bool
	}{
		{"literal", "identity/group/name/Admins", "identity/group/name/admins", true, false},
		{"literal already folded", "identity/group/name/admins", "identity/group/name/admins", true, true},
		{"literal, another name", "identity/group/name/Admins", "identity/group/name/admin", false, false},
		{"the resource is taken as folded", "identity/group/name/ADMINS", "identity/group/name/ADMINS", false, true},
		{"glob", "identity/group/name/Adm*", "identity/group/name/admins-2", true, false},
		{"glob, another name", "identity/group/name/Adm*", "identity/group/name/ops", false, false},
		{"plus before the name", "identity/group/+/Admins", "identity/group/name/admins", true, false},
		{"plus in the name", "identity/group/name/+/B", "identity/group/name/x/b", true, false},
		{"name of two segments", "identity/group/name/A/B", "identity/group/name/a/b", true, false},
		{"glob before the prefix ends", "identity/group/na*", "identity/group/name/Any", true, true},
		{"the prefix is not folded", "Identity/group/name/admins", "identity/group/name/admins", false, false},
		{"plus outside the prefix: not folded", "identity/group/+/Admins", "identity/group/id/admins", false, false},
		{"plus outside the prefix: as written", "identity/group/+/Admins", "identity/group/id/Admins", true, true},
		{"other resource: not folded", "secret/Admins", "secret/admins", false, false},
		{"other resource: as written", "secret/Admins", "secret/Admins", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
				"p": {{Path: tc.path, Capabilities: []keel.Capability{keel.CapRead}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			view := ra.FoldUnder(prefix, strings.ToLower)
			p := keel.Principal{ID: "alice", Policies: []string{"p"}}
			checkDecision(t, view.Authorize(context.Background(), p, keel.CapRead, tc.resource), tc.view)
			checkDecision(t, ra.Authorize(context.Background(), p, keel.CapRead, tc.resource), tc.original)
		})
	}
}

// TestRuleAuthorizerFoldUnderDeny: a deny written with any spelling holds
// in the view for the folded name, and nowhere else.
func TestRuleAuthorizerFoldUnderDeny(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"all": {{Path: "*", Capabilities: []keel.Capability{keel.CapRead}}},
		"deny": {
			{Path: "identity/group/name/Admins", Capabilities: []keel.Capability{keel.CapDeny}},
			{Path: "identity/group/name/OPS*", Capabilities: []keel.Capability{keel.CapDeny}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	view := keel.Fold(ra, "identity/group/name/", strings.ToLower)
	p := keel.Principal{ID: "alice", Policies: []string{"all", "deny"}}
	for resource, want := range map[string]bool{
		"identity/group/name/admins":  false,
		"identity/group/name/ops-eu":  false,
		"identity/group/name/team-a":  true,
		"identity/group/id/Admins":    true, // rights follow the endpoint
		"secret/identity/group/name/": true,
	} {
		checkDecision(t, view.Authorize(context.Background(), p, keel.CapRead, resource), want)
		checkDecision(t, ra.Authorize(context.Background(), p, keel.CapRead, resource), true)
	}
}

// TestRuleAuthorizerFoldUnderComposes: a view's FoldUnder folds its rules
// again, under nested or separate prefixes, in either order.
func TestRuleAuthorizerFoldUnderComposes(t *testing.T) {
	underscore := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	ra, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"p": {
			{Path: "x/y/A-B", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "x/z/A-B", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "w/A-B", Capabilities: []keel.Capability{keel.CapRead}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := keel.Principal{ID: "alice", Policies: []string{"p"}}
	for name, view := range map[string]keel.Authorizer{
		"outer first": keel.Fold(keel.Fold(keel.Fold(ra, "x/", strings.ToLower), "x/y/", underscore), "w/", underscore),
		"inner first": keel.Fold(keel.Fold(keel.Fold(ra, "w/", underscore), "x/y/", underscore), "x/", strings.ToLower),
		"again":       keel.Fold(keel.Fold(keel.Fold(keel.Fold(ra, "x/", strings.ToLower), "x/y/", underscore), "w/", underscore), "x/", strings.ToLower),
	} {
		t.Run(name, func(t *testing.T) {
			for resource, want := range map[string]bool{
				"x/y/a_b": true, // both folds
				"x/y/a-b": false,
				"x/z/a-b": true, // ToLower only
				"x/z/a_b": false,
				"w/A_B":   true, // underscore only
				"w/a_b":   false,
			} {
				t.Run(resource, func(t *testing.T) {
					checkDecision(t, view.Authorize(context.Background(), p, keel.CapRead, resource), want)
				})
			}
		})
	}
	checkDecision(t, ra.Authorize(context.Background(), p, keel.CapRead, "x/y/A-B"), true)
	checkDecision(t, ra.Authorize(context.Background(), p, keel.CapRead, "x/y/a_b"), false)
}

// TestRuleAuthorizerFoldUnderRefuses: a prefix that is not whole segments,
// or no fold, is the program's mistake.
func TestRuleAuthorizerFoldUnderRefuses(t *testing.T) {
	ra, err := keel.NewRuleAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(){
		"prefix without slash": func() { ra.FoldUnder("identity/group/name", strings.ToLower) },
		"empty prefix":         func() { ra.FoldUnder("", strings.ToLower) },
		"nil fold":             func() { ra.FoldUnder("identity/group/name/", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("FoldUnder did not panic")
				}
			}()
			call()
		})
	}
}

// TestFoldLeavesOtherAuthorizers: Fold returns an Authorizer that is not
// a Folder, nil included, as it is.
func TestFoldLeavesOtherAuthorizers(t *testing.T) {
	if got := keel.Fold(nil, "a/", strings.ToLower); got != nil {
		t.Errorf("Fold(nil) = %v, want nil", got)
	}
	if got := keel.Fold(keel.AllowAll{}, "a/", strings.ToLower); got != (keel.AllowAll{}) {
		t.Errorf("Fold(AllowAll) = %v", got)
	}
	rec := &recordingAuthorizer{}
	if got := keel.Fold(rec, "a/", strings.ToLower); got != rec {
		t.Errorf("Fold(recorder) = %v, want the recorder", got)
	}
	keel.Authorize(context.Background(), keel.Fold(rec, "a/", strings.ToLower), keel.CapRead, "a/B")
	if rec.resource != "a/B" {
		t.Errorf("the recorder was asked for %q, want the resource as given", rec.resource)
	}
}

// checkDecision fails t unless err is nil when want is true, and a
// KindForbidden error when want is false.
func checkDecision(t *testing.T, err error, want bool) {
	t.Helper()
	if want {
		if err != nil {
			t.Errorf("denied: %v; want allowed", err)
		}
		return
	}
	if err == nil {
		t.Error("allowed; want forbidden")
		return
	}
	if !errors.Is(err, keel.KindForbidden) {
		t.Errorf("error %v is not KindForbidden", err)
	}
	if got := keel.KindOf(err); got != keel.KindForbidden {
		t.Errorf("KindOf(%v) = %v, want %v", err, got, keel.KindForbidden)
	}
}

type recordingAuthorizer struct {
	err      error
	calls    int
	ctx      context.Context
	p        keel.Principal
	c        keel.Capability
	resource string
}

func (r *recordingAuthorizer) Authorize(ctx context.Context, p keel.Principal, c keel.Capability, resource string) error {
	r.calls++
	r.ctx, r.p, r.c, r.resource = ctx, p, c, resource
	return r.err
}

// TestAuthorizeAny: a principal whose rules can grant the capability on
// some resource under the prefix is allowed; one whose rules cannot, or
// whose deny covers the whole prefix, is refused; a deny on a part of the
// prefix is left to Authorize.
func TestAuthorizeAny(t *testing.T) {
	a, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"one":      {{Path: "peering/web", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"glob":     {{Path: "peer*", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"plus":     {{Path: "+/web", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"all":      {{Path: "*", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"other":    {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"shallow":  {{Path: "peering", Capabilities: []keel.Capability{keel.CapPeeringRead}}},
		"write":    {{Path: "peering/*", Capabilities: []keel.Capability{keel.CapPeeringWrite}}},
		"denyall":  {{Path: "peering/*", Capabilities: []keel.Capability{keel.CapDeny}}},
		"denysome": {{Path: "peering/a*", Capabilities: []keel.Capability{keel.CapDeny}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policies []string
		ok       bool
	}{
		{[]string{keel.RootPolicy}, true},
		{[]string{"one"}, true},
		{[]string{"glob"}, true},
		{[]string{"plus"}, true},
		{[]string{"all"}, true},
		{[]string{"one", "denysome"}, true},
		{nil, false},
		{[]string{"other"}, false},
		{[]string{"shallow"}, false},
		{[]string{"write"}, false},
		{[]string{"all", "denyall"}, false},
	} {
		err := a.AuthorizeAny(context.Background(), keel.Principal{Policies: tc.policies}, keel.CapPeeringRead, "peering/")
		if got := err == nil; got != tc.ok || err != nil && keel.KindOf(err) != keel.KindForbidden {
			t.Errorf("policies %q: %v, want allowed %v", tc.policies, err, tc.ok)
		}
	}
	if err := keel.AuthorizeAny(context.Background(), nil, keel.CapPeeringRead, "peering/"); err != nil {
		t.Errorf("nil Authorizer: %v", err)
	}
}
