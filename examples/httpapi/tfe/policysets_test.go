package tfe_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	gotfe "github.com/hashicorp/go-tfe"

	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
)

// fixtures creates a policy "p" and, in the default project of acme, a
// workspace "web"; it returns their ids and the project's.
func (s *server) fixtures(t testing.TB) (pol, ws, prj string) {
	t.Helper()
	name, level := "p", policy.Advisory
	p, err := s.policies.Create(asRoot(), "acme", policy.CreateRequest{Name: &name, EnforcementLevel: &level})
	if err != nil {
		t.Fatal(err)
	}
	org, err := s.catalog.GetOrganization(asRoot(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.catalog.CreateWorkspace(asRoot(), "acme", project.WorkspaceRequest{Name: new("web"), ProjectID: new(org.DefaultProjectID)})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, w.ID, org.DefaultProjectID
}

// TestPolicySetDocuments: the documents of the policy set routes, their
// attributes with HCP Terraform's defaults and relationships, and the
// sources of their errors.
func TestPolicySetDocuments(t *testing.T) {
	s := newServer(t)
	const jsonapi = "application/vnd.api+json"
	pol, ws, prj := s.fixtures(t)
	resp := s.do(t, "POST", "/api/v2/organizations/acme/policy-sets", jsonapi, `{"data":{"type":"policy-sets",
		"attributes":{"name":"base","description":"d"},
		"relationships":{"policies":{"data":[{"type":"policies","id":"`+pol+`"}]},
		"workspaces":{"data":[{"type":"workspaces","id":"`+ws+`"}]}}}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, decode(t, resp))
	}
	data := decode(t, resp)["data"].(map[string]any)
	id := data["id"].(string)
	attrs := data["attributes"].(map[string]any)
	want := map[string]any{
		"name": "base", "description": "d", "kind": "sentinel", "global": false, "overridable": false, "agent-enabled": false,
		"policy-tool-version": "latest", "policies-path": nil, "versioned": false,
		"policy-count": 1.0, "workspace-count": 1.0, "project-count": 0.0,
		"created-at": "2026-11-22T10:00:00.000Z", "updated-at": "2026-11-22T10:00:00.000Z",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("attribute %s = %v, want %v", k, attrs[k], v)
		}
	}
	if l, ok := attrs["policy-update-patterns"].([]any); !ok || len(l) != 0 {
		t.Errorf("policy-update-patterns %v", attrs["policy-update-patterns"])
	}
	rels := data["relationships"].(map[string]any)
	for name, ids := range map[string][]string{"policies": {pol}, "workspaces": {ws}, "projects": nil, "workspace-exclusions": nil} {
		got := []string{}
		for _, r := range rels[name].(map[string]any)["data"].([]any) {
			got = append(got, r.(map[string]any)["id"].(string))
		}
		if !slices.Equal(got, append([]string{}, ids...)) {
			t.Errorf("relationship %s = %v, want %v", name, got, ids)
		}
	}

	// A policy's create and show name its sets; update and list do not.
	resp = s.do(t, "GET", "/api/v2/policies/"+pol, "", "")
	pdoc := decode(t, resp)["data"].(map[string]any)
	if pdoc["attributes"].(map[string]any)["policy-set-count"] != 1.0 ||
		len(pdoc["relationships"].(map[string]any)["policy-sets"].(map[string]any)["data"].([]any)) != 1 {
		t.Fatalf("policy %v", pdoc)
	}

	// Relationships: add and remove, 204.
	for _, c := range []struct{ method, rel, body string }{
		{"POST", "projects", `{"data":[{"type":"projects","id":"` + prj + `"}]}`},
		{"POST", "workspace-exclusions", `{"data":[{"type":"workspaces","id":"` + ws + `"}]}`},
		{"DELETE", "workspaces", `{"data":[{"type":"workspaces","id":"` + ws + `"}]}`},
		{"DELETE", "policies", `{"data":[{"type":"policies","id":"` + pol + `"}]}`},
	} {
		if resp := s.do(t, c.method, "/api/v2/policy-sets/"+id+"/relationships/"+c.rel, jsonapi, c.body); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s %s: %d %v", c.method, c.rel, resp.StatusCode, decode(t, resp))
		}
	}
	resp = s.do(t, "GET", "/api/v2/policy-sets/"+id+"?include=policies,workspaces", "", "")
	doc := decode(t, resp)
	attrs = doc["data"].(map[string]any)["attributes"].(map[string]any)
	if attrs["policy-count"] != 0.0 || attrs["workspace-count"] != 0.0 || attrs["project-count"] != 1.0 {
		t.Fatalf("after relationship changes %v", attrs)
	}

	// PATCH renames and sets; the list has the set with its relationships.
	resp = s.do(t, "PATCH", "/api/v2/policy-sets/"+id, jsonapi, `{"data":{"type":"policy-sets","attributes":{"name":"renamed","overridable":true,"policy-update-patterns":["*.x"]}}}`)
	attrs = decode(t, resp)["data"].(map[string]any)["attributes"].(map[string]any)
	if resp.StatusCode != http.StatusOK || attrs["name"] != "renamed" || attrs["overridable"] != true {
		t.Fatalf("update %d %v", resp.StatusCode, attrs)
	}
	resp = s.do(t, "GET", "/api/v2/organizations/acme/policy-sets?search%5Bname%5D=REN&filter%5Bkind%5D=sentinel", "", "")
	doc = decode(t, resp)
	if list := doc["data"].([]any); len(list) != 1 || list[0].(map[string]any)["relationships"].(map[string]any)["projects"] == nil ||
		doc["meta"].(map[string]any)["pagination"].(map[string]any)["total-count"] != 1.0 {
		t.Fatalf("list %v", doc)
	}

	tests := []struct {
		name, method, path, body string
		status                   int
		sources                  []string
	}{
		{"name and kind", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"a b","kind":"x"}}}`,
			422, []string{"pointer /data/attributes/name", "pointer /data/attributes/kind"}},
		{"members", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"m"},
			"relationships":{"policies":{"data":[{"type":"policies","id":"pol-x"}]},"projects":{"data":[{"type":"projects","id":"prj-x"}]},
			"workspace-exclusions":{"data":[{"type":"workspaces","id":"ws-x"}]}}}}`,
			422, []string{"pointer /data/relationships/policies/data/0/id", "pointer /data/relationships/projects/data/0/id", "pointer /data/relationships/workspace-exclusions/data/0/id"}},
		{"global with workspaces", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"g","global":true},
			"relationships":{"workspaces":{"data":[{"type":"workspaces","id":"` + ws + `"}]}}}}`, 422, []string{"pointer /data/attributes/global"}},
		{"attribute types", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"t","global":"yes","policy-update-patterns":"x","agent-enabled":1}}}`,
			422, []string{"pointer /data/attributes/policy-update-patterns", "pointer /data/attributes/global", "pointer /data/attributes/agent-enabled"}},
		{"vcs-repo", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"v","vcs-repo":{"identifier":"a/b"}}}}`,
			422, []string{"pointer /data/attributes/vcs-repo"}},
		{"name taken", "POST", "/api/v2/organizations/acme/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"RENAMED"}}}`, 422, nil},
		{"add unknown members", "POST", "/api/v2/policy-sets/" + id + "/relationships/workspaces", `{"data":[{"type":"workspaces","id":"` + ws + `"},{"type":"workspaces","id":"ws-x"}]}`,
			422, []string{"pointer /data/1/id"}},
		{"add of a wrong type", "POST", "/api/v2/policy-sets/" + id + "/relationships/projects", `{"data":[{"type":"workspaces","id":"` + ws + `"}]}`,
			422, []string{"pointer /data/0/type"}},
		{"add nothing", "POST", "/api/v2/policy-sets/" + id + "/relationships/policies", `{"data":[]}`, 422, []string{"pointer /data"}},
		{"unknown relationship", "POST", "/api/v2/policy-sets/" + id + "/relationships/teams", `{"data":[]}`, 404, nil},
		{"include", "GET", "/api/v2/policy-sets/" + id + "?include=teams", "", 422, []string{"parameter include"}},
		{"filter kind", "GET", "/api/v2/organizations/acme/policy-sets?filter%5Bkind%5D=x", "", 422, []string{"parameter filter[kind]"}},
		{"unknown set", "GET", "/api/v2/policy-sets/polset-x", "", 404, nil},
		{"unknown organization", "POST", "/api/v2/organizations/nope/policy-sets", `{"data":{"type":"policy-sets","attributes":{"name":"a b"}}}`, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.do(t, tt.method, tt.path, jsonapi, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 404 && tt.name == "unknown relationship" {
				return
			}
			doc := decode(t, resp)
			if got := sources(doc); !slices.Equal(got, tt.sources) {
				t.Fatalf("sources %q, want %q: %v", got, tt.sources, doc)
			}
		})
	}

	// Existence hidden: a caller without manage-policies gets 404 on every
	// route, whatever the body.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v2/policy-sets/" + id}, {"PATCH", "/api/v2/policy-sets/" + id}, {"DELETE", "/api/v2/policy-sets/" + id},
		{"POST", "/api/v2/policy-sets/" + id + "/relationships/workspaces"}, {"GET", "/api/v2/organizations/acme/policy-sets"},
		{"POST", "/api/v2/organizations/acme/policy-sets"},
	} {
		req, _ := http.NewRequest(c.method, s.srv.URL+c.path, strings.NewReader(`{"data":{"type":"policy-sets","attributes":{"name":"a b"}}}`))
		req.Header.Set("Authorization", "Bearer reader")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("reader %s %s: %d", c.method, c.path, resp.StatusCode)
		}
	}

	if resp := s.do(t, "DELETE", "/api/v2/policy-sets/"+id, "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete %d", resp.StatusCode)
	}
	if resp := s.do(t, "GET", "/api/v2/policy-sets/"+id, "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("read deleted %d", resp.StatusCode)
	}
}

// TestPolicySetsWithGoTFE: go-tfe's PolicySets client against the adapter,
// as the tfe provider calls it; deleting a workspace detaches it.
func TestPolicySetsWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	pol, ws, prj := s.fixtures(t)
	name, level := "q", policy.Advisory
	q, err := s.policies.Create(asRoot(), "acme", policy.CreateRequest{Name: &name, EnforcementLevel: &level})
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.PolicySets.Create(ctx, "acme", gotfe.PolicySetCreateOptions{
		Name: gotfe.String("base"), Description: gotfe.String("d"), Global: gotfe.Bool(false), Kind: gotfe.Sentinel,
		Policies: []*gotfe.Policy{{ID: pol}}, Workspaces: []*gotfe.Workspace{{ID: ws}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if set.Name != "base" || set.Description != "d" || set.Kind != gotfe.Sentinel || set.Overridable == nil || *set.Overridable ||
		set.PolicyCount != 1 || set.WorkspaceCount != 1 || set.Organization.Name != "acme" || len(set.Policies) != 1 ||
		set.PolicyToolVersion != "latest" || set.CreatedAt.IsZero() {
		t.Fatalf("created %+v", set)
	}
	if err := c.PolicySets.AddPolicies(ctx, set.ID, gotfe.PolicySetAddPoliciesOptions{Policies: []*gotfe.Policy{{ID: q.ID}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PolicySets.RemovePolicies(ctx, set.ID, gotfe.PolicySetRemovePoliciesOptions{Policies: []*gotfe.Policy{{ID: pol}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PolicySets.AddProjects(ctx, set.ID, gotfe.PolicySetAddProjectsOptions{Projects: []*gotfe.Project{{ID: prj}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PolicySets.AddWorkspaceExclusions(ctx, set.ID, gotfe.PolicySetAddWorkspaceExclusionsOptions{WorkspaceExclusions: []*gotfe.Workspace{{ID: ws}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.PolicySets.ReadWithOptions(ctx, set.ID, &gotfe.PolicySetReadOptions{Include: []gotfe.PolicySetIncludeOpt{gotfe.PolicySetPolicies, gotfe.PolicySetProjects}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Policies) != 1 || got.Policies[0].ID != q.ID || got.Policies[0].Name != "q" || len(got.Projects) != 1 || got.ProjectCount != 1 ||
		len(got.WorkspaceExclusions) != 1 {
		t.Fatalf("read %+v", got)
	}
	updated, err := c.PolicySets.Update(ctx, set.ID, gotfe.PolicySetUpdateOptions{Name: gotfe.String("renamed"), Overridable: gotfe.Bool(true)})
	if err != nil || updated.Name != "renamed" || !*updated.Overridable {
		t.Fatalf("update %+v, %v", updated, err)
	}
	list, err := c.PolicySets.List(ctx, "acme", &gotfe.PolicySetListOptions{Search: "ren", Include: []gotfe.PolicySetIncludeOpt{gotfe.PolicySetWorkspaces}})
	if err != nil || len(list.Items) != 1 || len(list.Items[0].Workspaces) != 1 || list.TotalCount != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}

	// Deleting the workspace detaches it; removing it afterwards succeeds,
	// as the provider's destroy does.
	if err := c.Workspaces.DeleteByID(ctx, ws); err != nil {
		t.Fatal(err)
	}
	got, err = c.PolicySets.Read(ctx, set.ID)
	if err != nil || len(got.Workspaces) != 0 || got.WorkspaceCount != 0 || len(got.WorkspaceExclusions) != 0 {
		t.Fatalf("after workspace delete %+v, %v", got, err)
	}
	if err := c.PolicySets.RemoveWorkspaces(ctx, set.ID, gotfe.PolicySetRemoveWorkspacesOptions{Workspaces: []*gotfe.Workspace{{ID: ws}}}); err != nil {
		t.Fatalf("remove a deleted workspace: %v", err)
	}
	if err := c.PolicySets.RemoveProjects(ctx, set.ID, gotfe.PolicySetRemoveProjectsOptions{Projects: []*gotfe.Project{{ID: prj}}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.PolicySets.Create(ctx, "acme", gotfe.PolicySetCreateOptions{Name: gotfe.String("RENAMED")})
	if err == nil {
		t.Fatal("a taken name was accepted")
	}
	if err := c.PolicySets.Delete(ctx, set.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PolicySets.Read(ctx, set.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read deleted: %v", err)
	}
	if _, err := s.client(t, "reader").PolicySets.List(ctx, "acme", nil); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("reader list: %v", err)
	}
}
