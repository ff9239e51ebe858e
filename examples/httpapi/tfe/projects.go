package tfe

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

func orgRel(org string) map[string]any {
	return map[string]any{
		"data":  ref{ID: org, Type: "organizations"},
		"links": map[string]string{"related": "/api/v2/organizations/" + org},
	}
}

// projectDoc renders a project. full adds workspace-count, team-count and
// the permissions can-destroy and can-create-workspace, which the create
// response omits.
func projectDoc(p project.Project, full bool) map[string]any {
	perms := map[string]bool{"can-update": p.Permissions.CanUpdate}
	attrs := map[string]any{"name": p.Name, "description": p.Description, "permissions": perms}
	if full {
		perms["can-destroy"] = p.Permissions.CanDestroy
		perms["can-create-workspace"] = p.Permissions.CanCreateWorkspace
		attrs["workspace-count"] = p.WorkspaceCount
		attrs["team-count"] = p.TeamCount
	}
	return map[string]any{
		"id": p.ID, "type": "projects", "attributes": attrs,
		"relationships": map[string]any{"organization": orgRel(p.Org)},
		"links":         map[string]string{"self": "/api/v2/projects/" + p.ID},
	}
}

// projectInput reads the attributes of a projects document.
func projectInput(v *keel.Validation, res *reqResource) project.ProjectRequest {
	return project.ProjectRequest{Name: res.attrString(v, "Name"), Description: res.attrString(v, "Description")}
}

func (h *Handler) createProject(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "projects", projectInput, func(in project.ProjectRequest) (project.Project, error) {
		return h.catalog.Create(r.Context(), r.PathValue("org"), in)
	}, http.StatusCreated, func(p project.Project) map[string]any { return projectDoc(p, false) })
}

func (h *Handler) updateProject(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "projects", projectInput, func(in project.ProjectRequest) (project.Project, error) {
		return h.catalog.Update(r.Context(), r.PathValue("id"), in)
	}, http.StatusOK, fullProjectDoc)
}

// fullProjectDoc renders a project with every attribute.
func fullProjectDoc(p project.Project) map[string]any { return projectDoc(p, true) }

func (h *Handler) readProject(w http.ResponseWriter, r *http.Request) {
	p, err := h.catalog.Get(r.Context(), r.PathValue("id"))
	h.writeData(w, r, http.StatusOK, err, func() any { return fullProjectDoc(p) })
}

func (h *Handler) deleteProject(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.catalog.Delete(r.Context(), r.PathValue("id")))
}

// present reports whether a flag parameter was given and is not "false".
func present(r *http.Request, name string) bool {
	vals, ok := r.URL.Query()[name]
	return ok && (len(vals) == 0 || vals[0] != "false")
}

func (h *Handler) listProjects(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err == nil {
		err = n.check()
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	opts := project.ListRequest{
		ListRequest: n.list(), Offset: n.offset(), Query: q.Get("q"), Sort: param(r, "Sort"),
		CanUpdate:          present(r, "filter[permissions][update]"),
		CanCreateWorkspace: present(r, "filter[permissions][create-workspace]"),
	}
	if names := q.Get("filter[names]"); names != "" {
		opts.Names = strings.Split(names, ",")
	}
	page, err := h.catalog.List(r.Context(), r.PathValue("org"), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := pageDoc(r, docs(page.Items, fullProjectDoc), n.of(page.Matching))
	doc["meta"].(map[string]any)["status-counts"] = map[string]int{"total": page.Total, "matching": page.Matching}
	writeJSON(w, http.StatusOK, doc)
}

func (h *Handler) moveWorkspaces(w http.ResponseWriter, r *http.Request) {
	var doc struct {
		Data []ref `json:"data"`
	}
	if err := decodeBody(w, r, &doc); err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	ids := make([]string, 0, len(doc.Data))
	for i, d := range doc.Data {
		if d.Type != "workspaces" {
			v.Add("/data/"+strconv.Itoa(i)+"/type", "must be workspaces")
		}
		ids = append(ids, d.ID)
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	h.writeNoContent(w, r, h.catalog.MoveWorkspaces(r.Context(), r.PathValue("id"), ids))
}
