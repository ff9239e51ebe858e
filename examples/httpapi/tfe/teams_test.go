package tfe_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
)

func ptr[T any](v T) *T { return &v }

// dataNames returns attributes.name of each resource of a list document.
func dataNames(doc map[string]any) []string {
	var out []string
	for _, d := range doc["data"].([]any) {
		out = append(out, d.(map[string]any)["attributes"].(map[string]any)["name"].(string))
	}
	return out
}

// TestTeamListHTTP: the owners team is listed with the others, q keeps
// the teams whose name holds it, filter[names] and q together keep those
// of both; the owners team cannot be destroyed.
func TestTeamListHTTP(t *testing.T) {
	s := newServer(t)
	for _, n := range []string{"ops", "devs"} {
		if _, err := s.catalog.CreateTeam(asRoot(), "acme", project.TeamRequest{Name: new(n)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"devs", "ops", "owners"}},
		{"q=O", []string{"ops", "owners"}},
		{"q=o&filter%5Bnames%5D=devs,ops", []string{"ops"}},
		{"filter%5Bnames%5D=owners", []string{"owners"}},
	} {
		doc := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/teams?"+tc.query, "", ""))
		total := doc["meta"].(map[string]any)["pagination"].(map[string]any)["total-count"]
		if got := dataNames(doc); !slices.Equal(got, tc.want) || total != float64(len(tc.want)) {
			t.Errorf("%q: %q (total %v), want %q", tc.query, got, total, tc.want)
		}
	}
	doc := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/teams?filter%5Bnames%5D=owners", "", ""))
	a := doc["data"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
	if a["permissions"].(map[string]any)["can-destroy"] != false || a["organization-access"].(map[string]any)["manage-projects"] != true {
		t.Fatalf("owners team %v", a)
	}
}

// TestTeamAccessHTTP: adding an access the team has is refused (422) and
// changes nothing; GET /team-projects is paged, a page past the end
// empty with the true total.
func TestTeamAccessHTTP(t *testing.T) {
	s := newServer(t)
	const jsonapi = "application/vnd.api+json"
	org, _ := s.catalog.GetOrganization(asRoot(), "acme")
	var teams []string
	for _, n := range []string{"a", "b", "c"} {
		tm, err := s.catalog.CreateTeam(asRoot(), "acme", project.TeamRequest{Name: new(n)})
		if err != nil {
			t.Fatal(err)
		}
		teams = append(teams, tm.ID)
	}
	add := func(team, access string) *http.Response {
		return s.do(t, "POST", "/api/v2/team-projects", jsonapi, `{"data":{"type":"team-projects","attributes":{"access":"`+access+`"},
			"relationships":{"team":{"data":{"type":"teams","id":"`+team+`"}},"project":{"data":{"type":"projects","id":"`+org.DefaultProjectID+`"}}}}}`)
	}
	for _, tm := range teams {
		if resp := add(tm, "write"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("add %s: %d", tm, resp.StatusCode)
		}
	}
	resp := add(teams[0], "admin")
	if e := firstError(t, decode(t, resp)); resp.StatusCode != http.StatusUnprocessableEntity || e["status"] != "422" {
		t.Fatalf("add again: %d %v", resp.StatusCode, e)
	}
	if a, _ := s.catalog.GetTeamAccess(asRoot(), org.DefaultProjectID, teams[0]); a.Access != "write" {
		t.Fatalf("access after a refused add: %+v", a)
	}
	if p, _ := s.catalog.Get(asRoot(), org.DefaultProjectID); p.TeamCount != 3 {
		t.Fatalf("team count %d", p.TeamCount)
	}
	list := "/api/v2/team-projects?filter%5Bproject%5D%5Bid%5D=" + org.DefaultProjectID
	for _, tc := range []struct {
		query string
		n     int
		page  float64
	}{
		{"", 3, 1},
		{"&page%5Bnumber%5D=2&page%5Bsize%5D=2", 1, 2},
		{"&page%5Bnumber%5D=999&page%5Bsize%5D=100", 0, 999},
	} {
		doc := decode(t, s.do(t, "GET", list+tc.query, "", ""))
		pag := doc["meta"].(map[string]any)["pagination"].(map[string]any)
		if data := doc["data"].([]any); len(data) != tc.n || pag["total-count"] != 3.0 || pag["current-page"] != tc.page {
			t.Errorf("%q: %d accesses, pagination %v", tc.query, len(data), pag)
		}
	}
}

// TestPolicyListKindHTTP: filter[kind] keeps the policies of that kind.
func TestPolicyListKindHTTP(t *testing.T) {
	s := newServer(t)
	for _, in := range []policy.CreateRequest{
		{Name: ptr("sen"), Enforce: &[]policy.Enforce{{Path: "sen.policy"}}},
		{Name: ptr("rego"), Kind: ptr(policy.OPA), Query: ptr("data.x"), EnforcementLevel: ptr(policy.Mandatory)},
	} {
		if _, err := s.policies.Create(asRoot(), "acme", in); err != nil {
			t.Fatal(err)
		}
	}
	for kind, want := range map[string][]string{"opa": {"rego"}, "sentinel": {"sen"}, "": {"rego", "sen"}} {
		doc := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/policies?filter%5Bkind%5D="+kind, "", ""))
		total := doc["meta"].(map[string]any)["pagination"].(map[string]any)["total-count"]
		if got := dataNames(doc); !slices.Equal(got, want) || total != float64(len(want)) {
			t.Errorf("kind %q: %q (total %v), want %q", kind, got, total, want)
		}
	}
}
