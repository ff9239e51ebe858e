package identity

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		a := &recordingAuthorizer{}
		e := newEnv(t, open, &Options{Authorizer: a}, nil)
		ctx := context.Background()
		id := e.create(t, "g")
		a.Take()
		for name, tc := range map[string]struct {
			op   func() error
			want ask
		}{
			"create or update creates": {func() error { _, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Name: new("new")}); return err }, ask{Cap: keel.CapCreate, Resource: "identity/group"}},
			"create or update updates": {func() error { _, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Name: new("G")}); return err }, ask{Cap: keel.CapUpdate, Resource: "identity/group"}},
			"create or update by id":   {func() error { _, err := e.g.CreateOrUpdate(ctx, id, GroupRequest{}); return err }, ask{Cap: keel.CapUpdate, Resource: "identity/group"}},
			"update by id":             {func() error { _, err := e.g.Update(ctx, id, GroupRequest{}); return err }, ask{Cap: keel.CapUpdate, Resource: "identity/group/id/" + id}},
			"by name creates":          {func() error { _, err := e.g.CreateOrUpdateByName(ctx, "fresh", GroupRequest{}); return err }, ask{Cap: keel.CapCreate, Resource: "identity/group/name/fresh"}},
			"by name updates":          {func() error { _, err := e.g.CreateOrUpdateByName(ctx, "g", GroupRequest{}); return err }, ask{Cap: keel.CapUpdate, Resource: "identity/group/name/g"}},
			"read by id":               {func() error { _, err := e.g.Get(ctx, id); return err }, ask{Cap: keel.CapRead, Resource: "identity/group/id/" + id}},
			"read by name":             {func() error { _, err := e.g.GetByName(ctx, "G"); return err }, ask{Cap: keel.CapRead, Resource: "identity/group/name/g"}}, // folded
			"list ids":                 {func() error { _, err := e.g.List(ctx, keel.ListRequest{}); return err }, ask{Cap: keel.CapList, Resource: "identity/group/id/"}},
			"list names":               {func() error { _, err := e.g.ListNames(ctx, keel.ListRequest{}); return err }, ask{Cap: keel.CapList, Resource: "identity/group/name/"}},
			"delete by name":           {func() error { return e.g.DeleteByName(ctx, "nobody") }, ask{Cap: keel.CapDelete, Resource: "identity/group/name/nobody"}},
			"delete by id":             {func() error { return e.g.Delete(ctx, "nobody") }, ask{Cap: keel.CapDelete, Resource: "identity/group/id/nobody"}},
		} {
			t.Run(name, func(t *testing.T) {
				tc.op()
				if got := a.Take(); !slices.Equal(got, []ask{tc.want}) {
					t.Fatalf("asked %v, want %v", got, tc.want)
				}
				a.SetDeny(true)
				defer a.SetDeny(false)
				wantKind(t, tc.op(), keel.KindForbidden)
				a.Take()
			})
		}
	})
}

// TestReadRightsCannotChangeMembership: a caller that may read and list
// every group cannot add itself, or anything, to a group.
func TestReadRightsCannotChangeMembership(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"reader": {{Path: "identity/group*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, open, &Options{Authorizer: authz}, nil)
		root := keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
		reader := keel.WithPrincipal(context.Background(), keel.Principal{ID: "r", Policies: []string{"reader"}})
		admins, err := e.g.CreateOrUpdateByName(root, "admins", GroupRequest{Policies: &[]string{"admin"}})
		if err != nil {
			t.Fatal(err)
		}
		mine, err := e.g.CreateOrUpdateByName(root, "mine", GroupRequest{})
		if err != nil {
			t.Fatal(err)
		}
		before := storagetest.Dump(t, e.raw)
		add := GroupRequest{MemberGroupIDs: &[]string{mine.ID}, MemberEntityIDs: &[]string{"my-entity"}}
		for name, op := range map[string]func() error{
			"create or update by id": func() error { _, err := e.g.CreateOrUpdate(reader, admins.ID, add); return err },
			"create or update by name": func() error {
				in := add
				in.Name = new("admins")
				_, err := e.g.CreateOrUpdate(reader, "", in)
				return err
			},
			"update by id": func() error { _, err := e.g.Update(reader, admins.ID, add); return err },
			"by name":      func() error { _, err := e.g.CreateOrUpdateByName(reader, "admins", add); return err },
			"delete":       func() error { return e.g.Delete(reader, admins.ID) },
		} {
			t.Run(name, func(t *testing.T) { wantKind(t, op(), keel.KindForbidden) })
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
			t.Fatal("a reader changed the store")
		}
		if g, err := e.g.GetByName(reader, "admins"); err != nil || len(g.MemberGroupIDs) != 0 {
			t.Fatalf("reader's read = %+v, %v", g, err)
		}
	})
}

// TestRightsHoldForEverySpelling: names are case-insensitive, so a right
// on a name holds for every spelling of it, with a keel.RuleAuthorizer
// built from the policies as written and given to New as it is. A caller
// allowed everything on groups but denied "Admins" (or "Adm*", or
// "identity/group/+/ADMINS") cannot read, change or delete the group as
// "ADMINS", "admins" or "aDmInS"; a grant on "Team-A" works as "team-a",
// one on "Dev*" as "developers".
func TestRightsHoldForEverySpelling(t *testing.T) {
	policies := map[string][]keel.Rule{
		"all":        {{Path: "identity/group/name/*", Capabilities: []keel.Capability{keel.CapCreate, keel.CapRead, keel.CapUpdate, keel.CapDelete}}},
		"deny-exact": {{Path: "identity/group/name/Admins", Capabilities: []keel.Capability{keel.CapDeny}}},
		"deny-glob":  {{Path: "identity/group/name/Adm*", Capabilities: []keel.Capability{keel.CapDeny}}},
		"deny-plus":  {{Path: "identity/group/+/ADMINS", Capabilities: []keel.Capability{keel.CapDeny}}},
		"team": {
			{Path: "identity/group/name/Team-A", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "identity/group/name/Dev*", Capabilities: []keel.Capability{keel.CapRead}},
		},
	}
	for _, tc := range []struct {
		name     string
		policies map[string][]keel.Rule
	}{
		{"as written", policies},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEveryStore(t, func(t *testing.T, open everystore.Open) {
				authz, err := keel.NewRuleAuthorizer(tc.policies)
				if err != nil {
					t.Fatal(err)
				}
				e := newEnv(t, open, &Options{Authorizer: authz}, nil)
				checkEverySpelling(t, e)
			})
		})
	}
}

// checkEverySpelling checks, on e whose Authorizer holds the policies of
// TestRightsHoldForEverySpelling, that the rights on a name hold for every
// spelling of it.
func checkEverySpelling(t *testing.T, e *env) {
	as := func(policies ...string) context.Context {
		return keel.WithPrincipal(context.Background(), keel.Principal{ID: "caller", Policies: policies})
	}
	root := as(keel.RootPolicy)
	for _, name := range []string{"admins", "team-a", "developers"} {
		if _, err := e.g.CreateOrUpdateByName(root, name, GroupRequest{Policies: &[]string{"p"}}); err != nil {
			t.Fatal(err)
		}
	}
	before := storagetest.Dump(t, e.raw)
	for _, deny := range []string{"deny-exact", "deny-glob", "deny-plus"} {
		limited := as("all", deny)
		for _, spelling := range []string{"Admins", "ADMINS", "admins", "aDmInS"} {
			if _, err := e.g.GetByName(limited, spelling); keel.KindOf(err) != keel.KindForbidden {
				t.Errorf("%s: read %q: %v, want forbidden", deny, spelling, err)
			}
			if _, err := e.g.CreateOrUpdateByName(limited, spelling, GroupRequest{MemberEntityIDs: &[]string{"me"}}); keel.KindOf(err) != keel.KindForbidden {
				t.Errorf("%s: update %q: %v, want forbidden", deny, spelling, err)
			}
			if err := e.g.DeleteByName(limited, spelling); keel.KindOf(err) != keel.KindForbidden {
				t.Errorf("%s: delete %q: %v, want forbidden", deny, spelling, err)
			}
		}
		if _, err := e.g.GetByName(limited, "Team-A"); err != nil {
			t.Errorf("%s: read another group: %v", deny, err)
		}
	}
	if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
		t.Fatal("a refused spelling changed the store")
	}
	team := as("team")
	for _, spelling := range []string{"team-a", "TEAM-A", "Team-A", "developers", "DEVELOPERS", "Developers"} {
		if _, err := e.g.GetByName(team, spelling); err != nil {
			t.Errorf("read %q with grants on Team-A and Dev*: %v", spelling, err)
		}
	}
	if _, err := e.g.GetByName(team, "admins"); keel.KindOf(err) != keel.KindForbidden {
		t.Errorf("read admins with grants on Team-A and Dev*: %v, want forbidden", err)
	}
}
