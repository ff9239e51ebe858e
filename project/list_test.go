package project

import (
	"fmt"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// names returns the names of a page's projects.
func names(p Page) []string {
	var out []string
	for _, pr := range p.Projects {
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
		beta, gamma := page.Projects[0].ID, page.Projects[1].ID
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
			pag      keel.Pagination
		}{
			{"default order is by name", ListRequest{}, all, 6, keel.NewPagination(1, 20, 6)},
			{"sort name", ListRequest{Sort: "name"}, all, 6, keel.NewPagination(1, 20, 6)},
			{"sort -name", ListRequest{Sort: "-name"}, reversed(all), 6, keel.NewPagination(1, 20, 6)},
			{"page 2 of size 4", ListRequest{PageNumber: 2, PageSize: 4}, all[4:], 6, keel.NewPagination(2, 4, 6)},
			{"page 2 of size 4 reversed", ListRequest{PageNumber: 2, PageSize: 4, Sort: "-name"}, reversed(all)[4:], 6, keel.NewPagination(2, 4, 6)},
			{"page past the end", ListRequest{PageNumber: 9, PageSize: 4}, nil, 6, keel.NewPagination(9, 4, 6)},
			{"page past the end reversed", ListRequest{PageNumber: 9, PageSize: 4, Sort: "-name"}, nil, 6, keel.NewPagination(9, 4, 6)},
			{"size above 100 is 100", ListRequest{PageSize: 1000}, all, 6, keel.NewPagination(1, 100, 6)},
			{"q ignores case", ListRequest{Query: "DB"}, []string{"delta-db", "gamma-db"}, 2, keel.NewPagination(1, 20, 2)},
			{"q reversed", ListRequest{Query: "db", Sort: "-name"}, []string{"gamma-db", "delta-db"}, 2, keel.NewPagination(1, 20, 2)},
			{"filter names exact any case", ListRequest{Names: []string{"ALPHA", "epsilon", "eps", "alpha"}}, []string{"alpha", "epsilon"}, 2, keel.NewPagination(1, 20, 2)},
			{"filter names wins over q", ListRequest{Names: []string{"alpha"}, Query: "db"}, []string{"alpha"}, 1, keel.NewPagination(1, 20, 1)},
			{"filter update", ListRequest{CanUpdate: true}, []string{"Beta", "gamma-db"}, 2, keel.NewPagination(1, 20, 2)},
			{"filter create-workspace", ListRequest{CanCreateWorkspace: true}, []string{"gamma-db"}, 1, keel.NewPagination(1, 20, 1)},
			{"filter update and q", ListRequest{CanUpdate: true, Query: "beta"}, []string{"Beta"}, 1, keel.NewPagination(1, 20, 1)},
			{"no match", ListRequest{Query: "zzz"}, nil, 0, keel.NewPagination(1, 20, 0)},
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
				if fmt.Sprint(deref(got.Pagination)) != fmt.Sprint(deref(tt.pag)) {
					t.Fatalf("pagination = %v, want %v", deref(got.Pagination), deref(tt.pag))
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

func TestPagination(t *testing.T) {
	tests := []struct {
		name                string
		number, size, total int
		want                string
	}{
		{"empty", 1, 20, 0, "1 20 <nil> <nil> 1 0"},
		{"first of three", 1, 10, 25, "1 10 <nil> 2 3 25"},
		{"middle", 2, 10, 25, "2 10 1 3 3 25"},
		{"last", 3, 10, 25, "3 10 2 <nil> 3 25"},
		{"past the end", 7, 10, 25, "7 10 3 <nil> 3 25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(deref(keel.NewPagination(tt.number, tt.size, tt.total))...); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func deref(p keel.Pagination) []any {
	show := func(v *int) any {
		if v == nil {
			return "<nil>"
		}
		return *v
	}
	return []any{p.CurrentPage, " ", p.PageSize, " ", show(p.PrevPage), " ", show(p.NextPage), " ", p.TotalPages, " ", p.TotalCount}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
