package tfe_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
)

// decode reads a JSON response body into a generic document.
func decode(t testing.TB, resp *http.Response) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return doc
}

// firstError returns the first error object of an error document.
func firstError(t testing.TB, doc map[string]any) map[string]any {
	t.Helper()
	errs, _ := doc["errors"].([]any)
	if len(errs) == 0 {
		t.Fatalf("no errors in %v", doc)
	}
	return errs[0].(map[string]any)
}

func TestPing(t *testing.T) {
	s := newServer(t)
	if resp := s.do(t, "GET", "/api/v2/ping", "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// sources returns the sources of the errors of an error document, each
// as "pointer /a/b" or "parameter name".
func sources(doc map[string]any) []string {
	var out []string
	for _, e := range doc["errors"].([]any) {
		src, _ := e.(map[string]any)["source"].(map[string]any)
		for k, v := range src {
			out = append(out, k+" "+v.(string))
		}
	}
	return out
}

func TestErrorDocuments(t *testing.T) {
	s := newServer(t)
	const jsonapi = "application/vnd.api+json"
	org, err := s.catalog.GetOrganization(asRoot(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	doc := func(typ, attrs, rels string) string {
		return `{"data":{"type":"` + typ + `","attributes":{` + attrs + `},"relationships":{` + rels + `}}}`
	}
	owners, err := s.catalog.ListTeams(asRoot(), "acme", project.ListTeamsRequest{Names: []string{project.OwnersTeamName}})
	if err != nil || len(owners.Items) != 1 {
		t.Fatalf("owners team: %+v, %v", owners, err)
	}
	ownersID := owners.Items[0].ID
	if _, err := s.catalog.CreateTeamAccess(asRoot(), project.TeamAccess{ProjectID: org.DefaultProjectID, TeamID: ownersID}); err != nil {
		t.Fatal(err)
	}
	access := `"team":{"data":{"type":"teams","id":"` + ownersID + `"}},"project":{"data":{"type":"projects","id":"` + org.DefaultProjectID + `"}}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		status  string
		sources []string
	}{
		// The shape of the document: the adapter's own problems.
		{"malformed body", "POST", "/api/v2/organizations/acme/projects", "{", "422", []string{"pointer /data"}},
		{"empty body", "POST", "/api/v2/organizations/acme/projects", "", "422", []string{"pointer /data"}},
		{"no data", "POST", "/api/v2/organizations/acme/projects", `{}`, "422", []string{"pointer /data"}},
		{"wrong type", "POST", "/api/v2/organizations/acme/projects", `{"data":{"type":"project","attributes":{"name":"abc"}}}`, "422", []string{"pointer /data/type"}},
		{"wrong attribute type", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":5,"enforce":[{"path":"x.policy"}]`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"enforce not an array", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":{"path":"p.policy"}`, ""), "422", []string{"pointer /data/attributes/enforce"}},
		{"wrong relationship type", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":[{"path":"p.policy"}]`, `"policy-sets":{"data":[{"type":"policies","id":"polset-x"}]}`), "422", []string{"pointer /data/relationships/policy-sets/data/0/type"}},
		{"two teams for one", "POST", "/api/v2/team-projects", doc("team-projects", "", `"team":{"data":[{"type":"teams","id":"a"},{"type":"teams","id":"b"}]},"project":{"data":{"type":"projects","id":"`+org.DefaultProjectID+`"}}`), "422", []string{"pointer /data/relationships/team/data"}},
		{"move: wrong type", "POST", "/api/v2/projects/" + org.DefaultProjectID + "/relationships/workspaces", `{"data":[{"type":"projects","id":"x"}]}`, "422", []string{"pointer /data/0/type"}},
		{"page size", "GET", "/api/v2/organizations/acme/policies?page%5Bsize%5D=x", "", "422", []string{"parameter page[size]"}},
		{"include", "GET", "/api/v2/organizations/acme/policies?include=sets", "", "422", []string{"parameter include"}},

		// The domain's rules, named by Go path, mapped by the adapter's table.
		{"project name and description", "POST", "/api/v2/organizations/acme/projects", doc("projects", `"name":"x","description":"`+strings.Repeat("d", 257)+`"`, ""), "422", []string{"pointer /data/attributes/name", "pointer /data/attributes/description"}},
		{"project name required", "POST", "/api/v2/organizations/acme/projects", doc("projects", "", ""), "422", []string{"pointer /data/attributes/name"}},
		{"project description on update", "PATCH", "/api/v2/projects/" + org.DefaultProjectID, doc("projects", `"description":"`+strings.Repeat("d", 257)+`"`, ""), "422", []string{"pointer /data/attributes/description"}},
		{"policy name", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"a b","enforce":[{"path":"a b.policy"}]`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"two enforce elements", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":[{"path":"p.policy"},{"path":"p.policy"}]`, ""), "422", []string{"pointer /data/attributes/enforce"}},
		{"enforce mode", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":[{"path":"p.policy","mode":"strict"}]`, ""), "422", []string{"pointer /data/attributes/enforce/0/mode"}},
		{"enforce path", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":[{"mode":"advisory"}]`, ""), "422", []string{"pointer /data/attributes/enforce/0/path"}},
		{"enforcement level", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforcement-level":"strict"`, ""), "422", []string{"pointer /data/attributes/enforcement-level"}},
		{"kind and query", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","kind":"rego","enforcement-level":"advisory"`, ""), "422", []string{"pointer /data/attributes/kind"}},
		{"policy set ids", "POST", "/api/v2/organizations/acme/policies", doc("policies", `"name":"p","enforce":[{"path":"p.policy"}]`, `"policy-sets":{"data":[{"type":"policy-sets","id":"polset-x"},{"type":"policy-sets","id":"polset-y"}]}`), "422", []string{"pointer /data/relationships/policy-sets/data/0/id", "pointer /data/relationships/policy-sets/data/1/id"}},
		{"organization name required", "POST", "/api/v2/organizations", doc("organizations", `"email":"a@b.test"`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"team name", "POST", "/api/v2/organizations/acme/teams", doc("teams", `"name":"a b"`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"workspace name required", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", "", ""), "422", []string{"pointer /data/attributes/name"}},
		{"workspace name", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"a.b"`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"workspace project", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w"`, `"project":{"data":{"type":"projects","id":"prj-nope"}}`), "422", []string{"pointer /data/relationships/project/data/id"}},
		{"team access: all required", "POST", "/api/v2/team-projects", doc("team-projects", `"access":"owner"`, ""), "422", []string{"pointer /data/relationships/project/data/id", "pointer /data/relationships/team/data/id", "pointer /data/attributes/access"}},
		{"team access: unknown team", "POST", "/api/v2/team-projects", doc("team-projects", `"access":"read"`, `"team":{"data":{"type":"teams","id":"team-nope"}},"project":{"data":{"type":"projects","id":"`+org.DefaultProjectID+`"}}`), "422", []string{"pointer /data/relationships/team/data/id"}},
		{"organization settings", "PATCH", "/api/v2/organizations/acme", doc("organizations", `"name":"other","collaborator-auth-policy":"sso","default-execution-mode":"agent"`, ""), "422", []string{"pointer /data/attributes/name", "pointer /data/attributes/collaborator-auth-policy", "pointer /data/attributes/default-execution-mode"}},
		{"organization setting type", "PATCH", "/api/v2/organizations/acme", doc("organizations", `"session-timeout":"x","cost-estimation-enabled":1`, ""), "422", []string{"pointer /data/attributes/session-timeout", "pointer /data/attributes/cost-estimation-enabled"}},
		{"workspace settings", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w","execution-mode":"agent","queue-all-runs":"yes"`, ""), "422", []string{"pointer /data/attributes/queue-all-runs"}},
		{"workspace execution mode", "PATCH", "/api/v2/organizations/acme/workspaces/nope", doc("workspaces", `"execution-mode":"agent"`, ""), "404", nil},
		{"huge page number: projects", "GET", "/api/v2/organizations/acme/projects?page%5Bnumber%5D=9223372036854775807", "", "422", []string{"parameter page[number]"}},
		{"huge page number: policies", "GET", "/api/v2/organizations/acme/policies?page%5Bnumber%5D=9223372036854775807", "", "422", []string{"parameter page[number]"}},
		{"huge page number: workspaces", "GET", "/api/v2/organizations/acme/workspaces?page%5Bnumber%5D=9223372036854775807", "", "422", []string{"parameter page[number]"}},
		{"page number past the lists' bound: projects", "GET", "/api/v2/organizations/acme/projects?page%5Bnumber%5D=16777217", "", "422", []string{"parameter page[number]"}},
		{"page number past the lists' bound: teams", "GET", "/api/v2/organizations/acme/teams?page%5Bnumber%5D=16777217", "", "422", []string{"parameter page[number]"}},
		{"page number past the lists' bound: policy sets", "GET", "/api/v2/organizations/acme/policy-sets?page%5Bnumber%5D=16777217", "", "422", []string{"parameter page[number]"}},
		{"page number past int", "GET", "/api/v2/organizations/acme/workspaces?page%5Bnumber%5D=92233720368547758070", "", "422", []string{"parameter page[number]"}},
		{"team settings", "POST", "/api/v2/organizations/acme/teams", doc("teams", `"name":"t","visibility":"public","organization-access":{"fly":true}`, ""), "422", []string{"pointer /data/attributes/visibility", "pointer /data/attributes/organization-access/fly"}},
		{"custom access values", "POST", "/api/v2/team-projects", doc("team-projects", `"access":"custom","workspace-access":{"runs":"destroy"}`, `"project":{"data":{"type":"projects","id":"`+org.DefaultProjectID+`"}}`), "422", []string{"pointer /data/relationships/team/data/id", "pointer /data/attributes/workspace-access/runs"}},
		{"unknown team access", "GET", "/api/v2/team-projects/tprj_team-x_prj-y", "", "404", nil},
		{"bad sort", "GET", "/api/v2/organizations/acme/projects?sort=id", "", "422", []string{"parameter sort"}},
		{"policy kind filter", "GET", "/api/v2/organizations/acme/policies?filter%5Bkind%5D=rego", "", "422", []string{"parameter filter[kind]"}},
		{"workspace include", "GET", "/api/v2/organizations/acme/workspaces?include=organization,runs", "", "422", []string{"parameter include"}},
		{"workspace include on read", "GET", "/api/v2/organizations/acme/workspaces/nope?include=organization", "", "404", nil},
		{"setting-overwrites not an object", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w","setting-overwrites":true`, ""), "422", []string{"pointer /data/attributes/setting-overwrites"}},
		{"own execution mode without one", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w","setting-overwrites":{"execution-mode":true,"agent-pool":true}`, ""), "422", []string{"pointer /data/attributes/setting-overwrites/execution-mode"}},
		{"operations against execution mode", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w","operations":false,"execution-mode":"remote"`, ""), "422", []string{"pointer /data/attributes/operations"}},
		{"auto-destroy-at", "POST", "/api/v2/organizations/acme/workspaces", doc("workspaces", `"name":"w","auto-destroy-at":"tomorrow"`, ""), "422", []string{"pointer /data/attributes/auto-destroy-at"}},
		{"rename the owners team", "PATCH", "/api/v2/teams/" + ownersID, doc("teams", `"name":"admins"`, ""), "422", []string{"pointer /data/attributes/name"}},
		{"delete the owners team", "DELETE", "/api/v2/teams/" + ownersID, "", "409", nil},
		{"team access given already", "POST", "/api/v2/team-projects", doc("team-projects", `"access":"admin"`, access), "422", nil},
		{"team access page number", "GET", "/api/v2/team-projects?filter%5Bproject%5D%5Bid%5D=" + org.DefaultProjectID + "&page%5Bnumber%5D=x", "", "422", []string{"parameter page[number]"}},

		{"unknown organization", "GET", "/api/v2/organizations/nope/policies", "", "404", nil},
		{"unknown project", "GET", "/api/v2/projects/prj-nope", "", "404", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.do(t, tt.method, tt.path, jsonapi, tt.body)
			if got := resp.Header.Get("Content-Type"); got != jsonapi {
				t.Fatalf("content type %q", got)
			}
			doc := decode(t, resp)
			e := firstError(t, doc)
			if e["status"] != tt.status || strconvAtoi(tt.status) != resp.StatusCode {
				t.Fatalf("status %v (%d), want %s: %v", e["status"], resp.StatusCode, tt.status, doc)
			}
			if got := sources(doc); !slices.Equal(got, tt.sources) {
				t.Fatalf("sources %q, want %q: %v", got, tt.sources, doc)
			}
			if tt.status == "404" && (e["title"] != "not found" || e["detail"] != nil) {
				t.Fatalf("404 error %v", e)
			}
		})
	}
}

func strconvAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestMoveWorkspacesHTTP(t *testing.T) {
	s := newServer(t)
	ctx := asRoot()
	name := "target"
	dst, err := s.catalog.Create(ctx, "acme", project.ProjectRequest{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := s.catalog.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("w1")})
	if err != nil {
		t.Fatal(err)
	}
	body := func(ids ...string) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, `{"type":"workspaces","id":"`+id+`"}`)
		}
		return `{"data":[` + strings.Join(parts, ",") + `]}`
	}
	tests := []struct {
		name   string
		dest   string
		body   string
		status int
		detail string
	}{
		{"unknown workspace refuses all", dst.ID, body(ws.ID, "ws-missing"), 403, "ws-missing"},
		{"unknown destination", "prj-missing", body(ws.ID), 404, ""},
		{"wrong type", dst.ID, `{"data":[{"type":"projects","id":"x"}]}`, 422, ""},
		{"moves", dst.ID, body(ws.ID), 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.do(t, "POST", "/api/v2/projects/"+tt.dest+"/relationships/workspaces", "application/vnd.api+json", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.detail != "" {
				e := firstError(t, decode(t, resp))
				if e["title"] != "forbidden" || !strings.Contains(e["detail"].(string), tt.detail) {
					t.Fatalf("error %v", e)
				}
			}
		})
	}
	p, _ := s.catalog.Get(ctx, dst.ID)
	if p.WorkspaceCount != 1 {
		t.Fatalf("workspace-count %d", p.WorkspaceCount)
	}
	// Deleting a project with workspaces: 409.
	if resp := s.do(t, "DELETE", "/api/v2/projects/"+dst.ID, "", ""); resp.StatusCode != http.StatusConflict {
		t.Fatalf("delete non-empty: %d", resp.StatusCode)
	}
}

func TestProjectListHTTP(t *testing.T) {
	s := newServer(t)
	for _, n := range []string{"bbb", "aaa", "ccc"} {
		if resp := s.do(t, "POST", "/api/v2/organizations/acme/projects", "application/vnd.api+json",
			`{"data":{"type":"projects","attributes":{"name":"`+n+`"}}}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", n, resp.StatusCode)
		}
	}
	resp := s.do(t, "GET", "/api/v2/organizations/acme/projects?sort=-name&page%5Bsize%5D=2&filter%5Bpermissions%5D%5Bupdate%5D=true", "", "")
	doc := decode(t, resp)
	var names []string
	for _, d := range doc["data"].([]any) {
		names = append(names, d.(map[string]any)["attributes"].(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "Default Project,ccc" {
		t.Fatalf("names %v", names)
	}
	meta := doc["meta"].(map[string]any)
	counts := meta["status-counts"].(map[string]any)
	pag := meta["pagination"].(map[string]any)
	if counts["total"] != 4.0 || counts["matching"] != 4.0 || pag["total-pages"] != 2.0 || pag["next-page"] != 2.0 || pag["prev-page"] != nil {
		t.Fatalf("meta %v", meta)
	}
	links := doc["links"].(map[string]any)
	if links["prev"] != nil || !strings.Contains(links["next"].(string), "page%5Bnumber%5D=2") || !strings.HasPrefix(links["last"].(string), "http://") {
		t.Fatalf("links %v", links)
	}
	attrs := doc["data"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
	if attrs["description"] != nil || attrs["workspace-count"] != 0.0 || attrs["permissions"].(map[string]any)["can-destroy"] != true {
		t.Fatalf("attributes %v", attrs)
	}
}

func TestPolicyShapesAndLimits(t *testing.T) {
	s := newServer(t)
	resp := s.do(t, "POST", "/api/v2/organizations/acme/policies", "application/vnd.api+json",
		`{"data":{"type":"policies","attributes":{"name":"p1","enforce":[{"path":"p1.policy","mode":"advisory"}]}}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	created := decode(t, resp)["data"].(map[string]any)
	id := created["id"].(string)
	links := created["links"].(map[string]any)
	if _, ok := links["download"]; ok || links["upload"] != "/api/v2/policies/"+id+"/upload" {
		t.Fatalf("create links %v", links)
	}
	if created["attributes"].(map[string]any)["updated-at"] != nil {
		t.Fatal("updated-at set at creation")
	}
	if _, ok := created["relationships"].(map[string]any)["policy-sets"]; !ok {
		t.Fatal("create response without policy-sets")
	}

	// 10 MiB + 1 byte: 413, nothing saved.
	big := strings.Repeat("x", policy.MaxCodeSize+1)
	if resp := s.do(t, "PUT", "/api/v2/policies/"+id+"/upload", "application/octet-stream", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("big upload: %d", resp.StatusCode)
	}
	if resp := s.do(t, "GET", "/api/v2/policies/"+id+"/download", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("download after refused upload: %d", resp.StatusCode)
	}
	if resp := s.do(t, "PUT", "/api/v2/policies/"+id+"/upload", "application/octet-stream", "code"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	resp = s.do(t, "GET", "/api/v2/policies/"+id+"/download", "", "")
	if b, _ := io.ReadAll(resp.Body); string(b) != "code" {
		t.Fatalf("download %q", b)
	}

	// Update omits policy-sets; list includes sets on request.
	resp = s.do(t, "PATCH", "/api/v2/policies/"+id, "application/vnd.api+json",
		`{"data":{"type":"policies","attributes":{"name":"renamed","description":"d"}}}`)
	updated := decode(t, resp)["data"].(map[string]any)
	if _, ok := updated["relationships"].(map[string]any)["policy-sets"]; ok || updated["attributes"].(map[string]any)["name"] != "p1" {
		t.Fatalf("update %v", updated)
	}
	if !strings.HasSuffix(updated["attributes"].(map[string]any)["updated-at"].(string), "Z") {
		t.Fatalf("updated-at %v", updated["attributes"])
	}
	resp = s.do(t, "GET", "/api/v2/organizations/acme/policies?include=policy_sets&search%5Bname%5D=p", "", "")
	doc := decode(t, resp)
	if doc["meta"].(map[string]any)["pagination"].(map[string]any)["total-count"] != 1.0 {
		t.Fatalf("meta %v", doc["meta"])
	}
	if inc, ok := doc["included"].([]any); !ok || len(inc) != 0 {
		t.Fatalf("included %v", doc["included"])
	}
	name := "base"
	set, err := s.policies.CreateSet(asRoot(), "acme", policy.CreateSetRequest{Name: &name, PolicyIDs: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	resp = s.do(t, "GET", "/api/v2/policies/"+id+"?include=policy_sets", "", "")
	doc = decode(t, resp)
	inc, _ := doc["included"].([]any)
	if len(inc) != 1 || inc[0].(map[string]any)["id"] != set.ID || doc["data"].(map[string]any)["attributes"].(map[string]any)["policy-set-count"] != 1.0 {
		t.Fatalf("included %v", doc["included"])
	}
}
