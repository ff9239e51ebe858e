package project

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestOrganizationSettingsDefaults: settings never sent read as HCP
// Terraform's defaults.
func TestOrganizationSettingsDefaults(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		o, err := e.c.GetOrganization(root(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		s := o.Settings
		if *s.CollaboratorAuthPolicy != authPolicyPassword || *s.DefaultExecutionMode != executionRemote ||
			!*s.CostEstimationEnabled || !*s.SpeculativePlanManagementEnabled || !*s.UserTokensEnabled ||
			*s.AllowForceDeleteWorkspaces || *s.AssessmentsEnforced || *s.SessionTimeout != 0 || *s.OwnersTeamSAMLRoleID != "" {
			t.Fatalf("defaults %+v", s)
		}
	})
}

// TestOrganizationCreateWithSettings: settings sent on create are kept.
func TestOrganizationCreateWithSettings(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		o, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("beta"), Email: new("b@b.test"), OrganizationSettings: OrganizationSettings{
			CollaboratorAuthPolicy: ptr(authPolicyTwoFactor), SpeculativePlanManagementEnabled: ptr(false), SessionTimeout: ptr(30),
		}})

		if err != nil {
			t.Fatal(err)
		}
		if *o.Settings.CollaboratorAuthPolicy != authPolicyTwoFactor || *o.Settings.SpeculativePlanManagementEnabled || *o.Settings.SessionTimeout != 30 || !*o.Settings.CostEstimationEnabled {
			t.Fatalf("created %+v", o.Settings)
		}
	})
}

// TestOrganizationUpdateKeepsFieldsNotSent: an update changes what it
// sends, keeps the rest, and the change is read back.
func TestOrganizationUpdateKeepsFieldsNotSent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if _, err := e.c.UpdateOrganization(root(), "acme", OrganizationRequest{OrganizationSettings: OrganizationSettings{CostEstimationEnabled: ptr(false)}}); err != nil {
			t.Fatal(err)
		}
		o, err := e.c.UpdateOrganization(root(), "acme", OrganizationRequest{Name: ptr("acme"), Email: ptr("new@acme.test"),
			OrganizationSettings: OrganizationSettings{AllowForceDeleteWorkspaces: ptr(true)}})
		if err != nil {
			t.Fatal(err)
		}
		read, err := e.c.GetOrganization(root(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []Organization{o, read} {
			if got.Email != "new@acme.test" || *got.Settings.CostEstimationEnabled || !*got.Settings.AllowForceDeleteWorkspaces || got.DefaultProjectID != e.org.DefaultProjectID {
				t.Fatalf("after updates %+v %+v", got, got.Settings)
			}
		}
	})
}

// TestOrganizationSettingsRules: each broken rule names its Go field, all
// at once, and a refused update leaves the organization as it was.
func TestOrganizationSettingsRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		in := OrganizationRequest{Name: ptr("other"), OrganizationSettings: OrganizationSettings{
			CollaboratorAuthPolicy: ptr("sso"), SessionTimeout: ptr(0), SessionRemember: ptr(-1), DefaultExecutionMode: ptr("agent"),
			SendPassingStatusesForUntriggeredSpeculativePlans: ptr(true), AggregatedCommitStatusEnabled: ptr(true),
		}}
		in.CostEstimationEnabled = ptr(false)
		_, err := e.c.UpdateOrganization(root(), "acme", in)
		want := []string{"Name", "CollaboratorAuthPolicy", "SessionTimeout", "SessionRemember", "DefaultExecutionMode", "AggregatedCommitStatusEnabled"}
		if !errors.Is(err, keel.KindInvalid) || !slices.Equal(fields(err), want) {
			t.Fatalf("err = %v (fields %q)", err, fields(err))
		}
		if o, _ := e.c.GetOrganization(root(), "acme"); !*o.Settings.CostEstimationEnabled {
			t.Fatal("a refused update changed the organization")
		}
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("beta"), Email: new(""), OrganizationSettings: OrganizationSettings{CollaboratorAuthPolicy: ptr("sso")}}); !slices.Equal(fields(err), []string{"CollaboratorAuthPolicy"}) {
			t.Fatalf("create: %v", err)
		}
		if _, err := e.c.GetOrganization(root(), "beta"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("a refused create created: %v", err)
		}
	})
}

// TestOrganizationRights: update needs update; a caller who cannot read
// the organization gets not found, before any rule of the body; the
// permissions and the list reflect the caller's rights.
func TestOrganizationRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader": {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}}},
			"admin":  {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate, keel.CapCreate}}},
		})
		e := newEnv(t, open, authz, nil)
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("hidden"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		reader, admin, nobody := as("r", "reader"), as("a", "admin"), as("n")
		bad := OrganizationRequest{OrganizationSettings: OrganizationSettings{CollaboratorAuthPolicy: ptr("sso")}}
		if _, err := e.c.UpdateOrganization(reader, "acme", OrganizationRequest{}); !errors.Is(err, keel.KindForbidden) {
			t.Fatalf("reader update: %v", err)
		}
		if _, err := e.c.UpdateOrganization(reader, "hidden", bad); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("update of an organization the caller cannot read: %v", err)
		}
		if _, err := e.c.UpdateOrganization(admin, "acme", OrganizationRequest{Email: ptr("x@y.test")}); err != nil {
			t.Fatalf("admin update: %v", err)
		}
		o, err := e.c.GetOrganization(admin, "acme")
		if err != nil {
			t.Fatal(err)
		}
		want := OrganizationPermissions{CanUpdate: true, CanCreateTeam: true, CanCreateWorkspace: true}
		if o.Permissions != want {
			t.Fatalf("permissions %+v, want %+v", o.Permissions, want)
		}
		callers := []struct {
			name string
			ctx  context.Context
			want []string
		}{
			{"reader", reader, []string{"acme"}},
			{"nobody", nobody, nil},
			{"root", root(), []string{"acme", "hidden"}},
		}
		for _, c := range callers {
			list, err := allOrganizations(e.c, c.ctx)
			var names []string
			for _, o := range list {
				names = append(names, o.Name)
			}
			if err != nil || !slices.Equal(names, c.want) {
				t.Errorf("%s lists %q, %v; want %q", c.name, names, err, c.want)
			}
		}
	})
}

// TestListOrganizationsPages: ListOrganizations walks by cursor, one at a
// time, to the organizations of one page, in name order.
func TestListOrganizationsPages(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	for _, n := range []string{"zeta", "beta", "Gamma"} {
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: ptr(n)}); err != nil {
			t.Fatal(err)
		}
	}
	one, err := e.c.ListOrganizations(root(), keel.ListRequest{})
	if err != nil || one.Next != "" {
		t.Fatalf("one page: %+v, %v", one, err)
	}
	var want, got []string
	for _, o := range one.Items {
		want = append(want, o.Name)
	}
	for o, err := range keel.All(root(), 1, e.c.ListOrganizations) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Name)
	}
	if !slices.Equal(got, want) || !slices.Equal(want, []string{"Gamma", "acme", "beta", "zeta"}) {
		t.Fatalf("walked %q, one page %q", got, want)
	}
}
