package tfe

import (
	"net/http"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

func orgDoc(o project.Organization) map[string]any {
	return map[string]any{
		"id": o.Name, "type": "organizations",
		"attributes": map[string]any{"name": o.Name, "email": o.Email, "created-at": timestamp(o.CreatedAt)},
		"relationships": map[string]any{
			"default-project": map[string]any{"data": ref{ID: o.DefaultProjectID, Type: "projects"}},
		},
		"links": map[string]string{"self": "/api/v2/organizations/" + o.Name},
	}
}

func (h *Handler) createOrganization(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "organizations")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	name, email := res.attrString(&v, "name"), res.attrString(&v, "email")
	if name == nil {
		v.Add("data.attributes.name", "is required")
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	o, err := h.catalog.CreateOrganization(r.Context(), *name, deref(email))
	h.writeData(w, r, http.StatusCreated, err, func() any { return orgDoc(o) })
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (h *Handler) readOrganization(w http.ResponseWriter, r *http.Request) {
	o, err := h.catalog.Organization(r.Context(), r.PathValue("org"))
	h.writeData(w, r, http.StatusOK, err, func() any { return orgDoc(o) })
}

func (h *Handler) listOrganizations(w http.ResponseWriter, r *http.Request) {
	orgs, err := h.catalog.Organizations(r.Context())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	data := make([]any, 0, len(orgs))
	for _, o := range orgs {
		data = append(data, orgDoc(o))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data": data,
		"meta": map[string]any{"pagination": paginationMeta(keel.NewPagination(1, max(len(orgs), 1), len(orgs)))},
	})
}

func (h *Handler) deleteOrganization(w http.ResponseWriter, r *http.Request) {
	if err := h.catalog.DeleteOrganization(r.Context(), r.PathValue("org")); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func workspaceDoc(ws project.Workspace) map[string]any {
	return map[string]any{
		"id": ws.ID, "type": "workspaces",
		"attributes": map[string]any{"name": ws.Name, "created-at": timestamp(ws.CreatedAt)},
		"relationships": map[string]any{
			"organization": map[string]any{"data": ref{ID: ws.Org, Type: "organizations"}},
			"project":      map[string]any{"data": ref{ID: ws.ProjectID, Type: "projects"}},
		},
		"links": map[string]string{"self": "/api/v2/workspaces/" + ws.ID},
	}
}

func (h *Handler) createWorkspace(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "workspaces")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	name := res.attrString(&v, "name")
	prj := res.relIDs(&v, "project", "projects")
	if name == nil {
		v.Add("data.attributes.name", "is required")
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	prjID := ""
	if len(prj) > 0 {
		prjID = prj[0]
	}
	ws, err := h.catalog.CreateWorkspace(r.Context(), r.PathValue("org"), *name, prjID)
	h.writeData(w, r, http.StatusCreated, err, func() any { return workspaceDoc(ws) })
}

func (h *Handler) readWorkspace(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.Workspace(r.Context(), r.PathValue("id"))
	h.writeWorkspace(w, r, ws, err)
}

func (h *Handler) readWorkspaceByName(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.WorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
	h.writeWorkspace(w, r, ws, err)
}

func (h *Handler) writeWorkspace(w http.ResponseWriter, r *http.Request, ws project.Workspace, err error) {
	h.writeData(w, r, http.StatusOK, err, func() any { return workspaceDoc(ws) })
}

// updateWorkspace serves the one update this adapter knows: moving the
// workspace to the project of relationships.project, with the rules of a
// move.
func (h *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.Workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.moveOne(w, r, ws)
}

func (h *Handler) updateWorkspaceByName(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.WorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.moveOne(w, r, ws)
}

func (h *Handler) moveOne(w http.ResponseWriter, r *http.Request, ws project.Workspace) {
	res, err := readDoc(w, r, "workspaces")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	prj := res.relIDs(&v, "project", "projects")
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	if len(prj) > 0 && prj[0] != ws.ProjectID {
		if err := h.catalog.MoveWorkspaces(r.Context(), prj[0], []string{ws.ID}); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	ws, err = h.catalog.Workspace(r.Context(), ws.ID)
	h.writeWorkspace(w, r, ws, err)
}

func (h *Handler) deleteWorkspace(w http.ResponseWriter, r *http.Request) {
	h.writeDeleted(w, r, h.catalog.DeleteWorkspace(r.Context(), r.PathValue("id")))
}

func (h *Handler) deleteWorkspaceByName(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.WorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
	if err == nil {
		err = h.catalog.DeleteWorkspace(r.Context(), ws.ID)
	}
	h.writeDeleted(w, r, err)
}

func (h *Handler) writeDeleted(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listWorkspaces lists the workspaces of filter[project][id] (the default
// project when absent), on one page.
func (h *Handler) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	prj := r.URL.Query().Get("filter[project][id]")
	if prj == "" {
		o, err := h.catalog.Organization(r.Context(), r.PathValue("org"))
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		prj = o.DefaultProjectID
	}
	list, err := h.catalog.Workspaces(r.Context(), prj)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	data := make([]any, 0, len(list))
	for _, ws := range list {
		if ws.Org == r.PathValue("org") {
			data = append(data, workspaceDoc(ws))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data": data,
		"meta": map[string]any{"pagination": paginationMeta(keel.NewPagination(1, max(len(data), 1), len(data)))},
	})
}

func teamDoc(t project.Team) map[string]any {
	return map[string]any{
		"id": t.ID, "type": "teams", "attributes": map[string]any{"name": t.Name},
		"relationships": map[string]any{"organization": map[string]any{"data": ref{ID: t.Org, Type: "organizations"}}},
		"links":         map[string]string{"self": "/api/v2/teams/" + t.ID},
	}
}

func (h *Handler) createTeam(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "teams")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	name := res.attrString(&v, "name")
	if name == nil {
		v.Add("data.attributes.name", "is required")
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	t, err := h.catalog.CreateTeam(r.Context(), r.PathValue("org"), *name)
	h.writeData(w, r, http.StatusCreated, err, func() any { return teamDoc(t) })
}

func (h *Handler) readTeam(w http.ResponseWriter, r *http.Request) {
	t, err := h.catalog.Team(r.Context(), r.PathValue("id"))
	h.writeData(w, r, http.StatusOK, err, func() any { return teamDoc(t) })
}

// accessID names a team's access to a project: "tprj_<team>_<project>"
// (ids hold no "_").
func accessID(a project.TeamAccess) string { return "tprj_" + a.TeamID + "_" + a.ProjectID }

func accessDoc(a project.TeamAccess) map[string]any {
	return map[string]any{
		"id": accessID(a), "type": "team-projects", "attributes": map[string]any{"access": a.Access},
		"relationships": map[string]any{
			"team":    map[string]any{"data": ref{ID: a.TeamID, Type: "teams"}},
			"project": map[string]any{"data": ref{ID: a.ProjectID, Type: "projects"}},
		},
	}
}

func (h *Handler) addTeamAccess(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "team-projects")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	access := res.attrString(&v, "access")
	team, prj := res.relIDs(&v, "team", "teams"), res.relIDs(&v, "project", "projects")
	if len(team) != 1 {
		v.Add("data.relationships.team.data", "is required")
	}
	if len(prj) != 1 {
		v.Add("data.relationships.project.data", "is required")
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	a, err := h.catalog.SetTeamAccess(r.Context(), prj[0], team[0], deref(access))
	h.writeData(w, r, http.StatusCreated, err, func() any { return accessDoc(a) })
}

func (h *Handler) listTeamAccess(w http.ResponseWriter, r *http.Request) {
	list, err := h.catalog.TeamAccesses(r.Context(), r.URL.Query().Get("filter[project][id]"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	data := make([]any, 0, len(list))
	for _, a := range list {
		data = append(data, accessDoc(a))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data": data,
		"meta": map[string]any{"pagination": paginationMeta(keel.NewPagination(1, max(len(data), 1), len(data)))},
	})
}

func (h *Handler) removeTeamAccess(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.PathValue("id"), "_")
	if len(parts) != 3 || parts[0] != "tprj" {
		h.writeError(w, r, keel.ErrNotFound)
		return
	}
	h.writeDeleted(w, r, h.catalog.RemoveTeamAccess(r.Context(), parts[2], parts[1]))
}
