package tfe_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/keelhq/keel/project"
)

// attrsOf returns data.attributes of a one-resource document.
func attrsOf(t testing.TB, doc map[string]any) map[string]any {
	t.Helper()
	data, ok := doc["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data in %v", doc)
	}
	return data["attributes"].(map[string]any)
}

// TestWorkspaceDocumentHTTP: the workspace document as HCP Terraform
// gives it: links.self by organization and name, links.self-html,
// source "tfe-api", setting-overwrites (the execution mode followed from
// the organization until one is sent), operations stored through the
// mode, auto-destroy-at set and cleared by null.
func TestWorkspaceDocumentHTTP(t *testing.T) {
	s := newServer(t)
	const jsonapi = "application/vnd.api+json"
	resp := s.do(t, "POST", "/api/v2/organizations/acme/workspaces", jsonapi,
		`{"data":{"type":"workspaces","attributes":{"name":"web","auto-destroy-at":"2027-01-02T03:04:05+01:00",
		"setting-overwrites":{"execution-mode":false,"agent-pool":false}}}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, decode(t, resp))
	}
	created := decode(t, resp)
	links := created["data"].(map[string]any)["links"].(map[string]any)
	if links["self"] != "/api/v2/organizations/acme/workspaces/web" || links["self-html"] != "/app/acme/workspaces/web" {
		t.Fatalf("links %v", links)
	}
	a := attrsOf(t, created)
	over := a["setting-overwrites"].(map[string]any)
	if a["source"] != "tfe-api" || a["auto-destroy-at"] != "2027-01-02T02:04:05.000Z" || a["execution-mode"] != "remote" ||
		a["operations"] != true || over["execution-mode"] != false || over["agent-pool"] != false {
		t.Fatalf("created %v", a)
	}
	resp = s.do(t, "PATCH", "/api/v2/organizations/acme/workspaces/web", jsonapi, `{"data":{"type":"workspaces","attributes":{"operations":false}}}`)
	a = attrsOf(t, decode(t, resp))
	over = a["setting-overwrites"].(map[string]any)
	if a["operations"] != false || a["execution-mode"] != "local" || over["execution-mode"] != true || over["agent-pool"] != true ||
		a["auto-destroy-at"] != "2027-01-02T02:04:05.000Z" {
		t.Fatalf("after operations false %v", a)
	}
	resp = s.do(t, "PATCH", "/api/v2/organizations/acme/workspaces/web", jsonapi, `{"data":{"type":"workspaces","attributes":{"auto-destroy-at":null}}}`)
	if a = attrsOf(t, decode(t, resp)); a["auto-destroy-at"] != nil || a["operations"] != false {
		t.Fatalf("after auto-destroy-at null %v", a)
	}
	resp = s.do(t, "PATCH", "/api/v2/organizations/acme/workspaces/web", jsonapi,
		`{"data":{"type":"workspaces","attributes":{"setting-overwrites":{"execution-mode":false}}}}`)
	if a = attrsOf(t, decode(t, resp)); a["execution-mode"] != "remote" || a["setting-overwrites"].(map[string]any)["execution-mode"] != false {
		t.Fatalf("after overwrite false %v", a)
	}
	resp = s.do(t, "PATCH", "/api/v2/organizations/acme", jsonapi, `{"data":{"type":"organizations","attributes":{"default-execution-mode":"local"}}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("organization update: %d", resp.StatusCode)
	}
	resp = s.do(t, "GET", "/api/v2/organizations/acme/workspaces/web", "", "")
	if a = attrsOf(t, decode(t, resp)); a["execution-mode"] != "local" || a["operations"] != false {
		t.Fatalf("following the organization's default %v", a)
	}
}

// TestWorkspaceListHTTP: search[wildcard-name], and include=organization
// and include=project add those resources once, on a list and a read;
// include values of what keel does not keep add nothing.
func TestWorkspaceListHTTP(t *testing.T) {
	s := newServer(t)
	for _, n := range []string{"hashicorp-prod", "hashicorp-staging", "web-prod"} {
		if _, err := s.catalog.CreateWorkspace(asRoot(), "acme", project.WorkspaceRequest{Name: new(n)}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(doc map[string]any) []string {
		var out []string
		for _, d := range doc["data"].([]any) {
			out = append(out, d.(map[string]any)["attributes"].(map[string]any)["name"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"search%5Bwildcard-name%5D=%2A-prod", []string{"hashicorp-prod", "web-prod"}},
		{"search%5Bwildcard-name%5D=hashicorp-%2A", []string{"hashicorp-prod", "hashicorp-staging"}},
		{"search%5Bwildcard-name%5D=%2A-dev", nil},
		{"search%5Bwildcard-name%5D=%2A-prod&search%5Bname%5D=web", []string{"web-prod"}},
	} {
		doc := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/workspaces?"+tc.query, "", ""))
		total := doc["meta"].(map[string]any)["pagination"].(map[string]any)["total-count"]
		if got := names(doc); !slices.Equal(got, tc.want) || total != float64(len(tc.want)) {
			t.Errorf("%s: %q (total %v), want %q", tc.query, got, total, tc.want)
		}
	}
	org, _ := s.catalog.GetOrganization(asRoot(), "acme")
	for _, path := range []string{
		"/api/v2/organizations/acme/workspaces?include=organization,project,current_run",
		"/api/v2/organizations/acme/workspaces/web-prod?include=organization,project,current_run",
	} {
		doc := decode(t, s.do(t, "GET", path, "", ""))
		inc, _ := doc["included"].([]any)
		var got []string
		for _, x := range inc {
			m := x.(map[string]any)
			got = append(got, m["type"].(string)+"/"+m["id"].(string))
		}
		if want := []string{"organizations/acme", "projects/" + org.DefaultProjectID}; !slices.Equal(got, want) {
			t.Fatalf("%s: included %q, want %q", path, got, want)
		}
		if email := inc[0].(map[string]any)["attributes"].(map[string]any)["email"]; email != "ops@acme.test" {
			t.Fatalf("included organization's email %v", email)
		}
	}
	doc := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/workspaces?include=readme", "", ""))
	if inc, ok := doc["included"].([]any); !ok || len(inc) != 0 {
		t.Fatalf("include of what keel does not keep: %v", doc["included"])
	}
	if _, ok := decode(t, s.do(t, "GET", "/api/v2/organizations/acme/workspaces", "", ""))["included"]; ok {
		t.Fatal("included without include")
	}
}
