package project

import (
	"context"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// names returns the names of a page's projects.
func names(p keel.CountedPage[Project]) []string {
	var out []string
	for _, pr := range p.Items {
		out = append(out, pr.Name)
	}
	return out
}

func TestListOptions(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"lister": {
				{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}},
				{Path: "organizations/acme/projects/", Capabilities: []keel.Capability{keel.CapRead}},
			},
		})
		e := newEnv(t, open, authz, nil)
		for _, n := range []string{"alpha", "Beta", "gamma-db", "delta-db", "epsilon"} {
			e.mkProject(t, n)
		}
		// Grant update on beta and gamma-db, create-workspace on gamma-db only.
		page, _ := e.c.List(root(), "acme", ListRequest{Names: []string{"beta", "gamma-db"}})
		beta, gamma := page.Items[0].ID, page.Items[1].ID
		authz2 := rules(t, map[string][]keel.Rule{
			"lister": {
				{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}},
				{Path: "organizations/acme/projects/" + beta, Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate}},
				{Path: "organizations/acme/projects/" + gamma, Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate}},
				{Path: "organizations/acme/projects/" + gamma + "/workspaces", Capabilities: []keel.Capability{keel.CapCreate}},
			},
		})
		e.c.authz = authz2
		all := []string{"alpha", "Beta", "Default Project", "delta-db", "epsilon", "gamma-db"}
		tests := []struct {
			name     string
			opts     ListRequest
			want     []string
			matching int
			next     bool
		}{
			{"default order is by name", ListRequest{}, all, 6, false},
			{"sort name", ListRequest{Sort: "name"}, all, 6, false},
			{"sort -name", ListRequest{Sort: "-name"}, reversed(all), 6, false},
			{"page 2 of size 4", ListRequest{ListRequest: keel.ListRequest{Limit: 4}, Offset: 4}, all[4:], 6, false},
			{"page 2 of size 4 reversed", ListRequest{ListRequest: keel.ListRequest{Limit: 4}, Offset: 4, Sort: "-name"}, reversed(all)[4:], 6, false},
			{"page past the end", ListRequest{ListRequest: keel.ListRequest{Limit: 4}, Offset: 32}, nil, 6, false},
			{"page past the end reversed", ListRequest{ListRequest: keel.ListRequest{Limit: 4}, Offset: 32, Sort: "-name"}, nil, 6, false},
			{"size above 100 is 100", ListRequest{ListRequest: keel.ListRequest{Limit: 1000}}, all, 6, false},
			{"q ignores case", ListRequest{Query: "DB"}, []string{"delta-db", "gamma-db"}, 2, false},
			{"q reversed", ListRequest{Query: "db", Sort: "-name"}, []string{"gamma-db", "delta-db"}, 2, false},
			{"filter names exact any case", ListRequest{Names: []string{"ALPHA", "epsilon", "eps", "alpha"}}, []string{"alpha", "epsilon"}, 2, false},
			{"filter names wins over q", ListRequest{Names: []string{"alpha"}, Query: "db"}, []string{"alpha"}, 1, false},
			{"filter update", ListRequest{CanUpdate: true}, []string{"Beta", "gamma-db"}, 2, false},
			{"filter create-workspace", ListRequest{CanCreateWorkspace: true}, []string{"gamma-db"}, 1, false},
			{"filter update and q", ListRequest{CanUpdate: true, Query: "beta"}, []string{"Beta"}, 1, false},
			{"no match", ListRequest{Query: "zzz"}, nil, 0, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := e.c.List(as("u", "lister"), "acme", tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(names(got), tt.want) {
					t.Fatalf("names = %q, want %q", names(got), tt.want)
				}
				if got.Total != 6 || got.Matching != tt.matching {
					t.Fatalf("status counts = %d/%d, want 6/%d", got.Total, got.Matching, tt.matching)
				}
				if (got.Next != "") != tt.next {
					t.Fatalf("next = %q, want one: %v", got.Next, tt.next)
				}
			})
		}
	})
}

func TestListBadSortIsInvalid(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		_, err := e.c.List(root(), "acme", ListRequest{Sort: "created-at"})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Sort" {
			t.Fatalf("err = %v", err)
		}
	})
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// TestListCursor: every order and filter of List walks by cursor, limit 2
// at a time, to the same list as one page; a cursor stays valid when the
// item it names is deleted.
func TestListCursor(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		for _, n := range []string{"alpha", "Beta", "gamma-db", "delta-db", "epsilon"} {
			e.mkProject(t, n)
		}
		walk := func(r ListRequest) []string {
			t.Helper()
			var out []string
			for p, err := range keel.All(root(), 2, func(ctx context.Context, lr keel.ListRequest) (keel.Page[Project], error) {
				r.ListRequest = lr
				page, err := e.c.List(ctx, "acme", r)
				return page.Page, err
			}) {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, p.Name)
			}
			return out
		}
		for _, r := range []ListRequest{{}, {Sort: "-name"}, {Query: "a"}, {Query: "a", Sort: "-name"}, {Names: []string{"beta", "epsilon", "alpha"}}} {
			one, err := e.c.List(root(), "acme", r)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := walk(r), names(one); !slices.Equal(got, want) {
				t.Errorf("walk %+v = %q, want %q", r, got, want)
			}
		}
		for _, sort := range []string{"name", "-name"} {
			first, err := e.c.List(root(), "acme", ListRequest{ListRequest: keel.ListRequest{Limit: 2}, Sort: sort})
			if err != nil || first.Next == "" {
				t.Fatalf("first page: %+v, %v", first, err)
			}
			last := first.Items[1]
			if err := e.c.Delete(root(), last.ID); err != nil {
				t.Fatal(err)
			}
			next, err := e.c.List(root(), "acme", ListRequest{ListRequest: keel.ListRequest{Limit: 10, Cursor: first.Next}, Sort: sort})
			if err != nil {
				t.Fatal(err)
			}
			all, _ := e.c.List(root(), "acme", ListRequest{Sort: sort})
			if want := names(all)[1:]; !slices.Equal(names(next), want) || next.Next != "" {
				t.Fatalf("%s: after %q deleted: %q (next %q), want %q", sort, last.Name, names(next), next.Next, want)
			}
		}
	})
}
