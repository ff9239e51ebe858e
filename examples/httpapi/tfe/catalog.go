package tfe

import (
	"net/http"
	"slices"
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
	type input struct{ name, email *string }
	serve(h, w, r, "organizations", func(v *keel.Validation, res *reqResource) input {
		return input{res.attrString(v, "Name"), res.attrString(v, "Email")}
	}, func(in input) (project.Organization, error) {
		return h.catalog.CreateOrganization(r.Context(), deref(in.name), deref(in.email))
	}, http.StatusCreated, orgDoc)
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
	h.writeList(w, r, docs(orgs, orgDoc), err)
}

func (h *Handler) deleteOrganization(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.catalog.DeleteOrganization(r.Context(), r.PathValue("org")))
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
	type input struct {
		name      *string
		projectID string
	}
	serve(h, w, r, "workspaces", func(v *keel.Validation, res *reqResource) input {
		return input{res.attrString(v, "Name"), res.relID(v, "ProjectID", "projects")}
	}, func(in input) (project.Workspace, error) {
		return h.catalog.CreateWorkspace(r.Context(), r.PathValue("org"), deref(in.name), in.projectID)
	}, http.StatusCreated, workspaceDoc)
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
	serve(h, w, r, "workspaces", func(v *keel.Validation, res *reqResource) string {
		return res.relID(v, "ProjectID", "projects")
	}, func(prj string) (project.Workspace, error) {
		if prj != "" && prj != ws.ProjectID {
			if err := h.catalog.MoveWorkspaces(r.Context(), prj, []string{ws.ID}); err != nil {
				return project.Workspace{}, err
			}
		}
		return h.catalog.Workspace(r.Context(), ws.ID)
	}, http.StatusOK, workspaceDoc)
}

func (h *Handler) deleteWorkspace(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.catalog.DeleteWorkspace(r.Context(), r.PathValue("id")))
}

func (h *Handler) deleteWorkspaceByName(w http.ResponseWriter, r *http.Request) {
	ws, err := h.catalog.WorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
	if err == nil {
		err = h.catalog.DeleteWorkspace(r.Context(), ws.ID)
	}
	h.writeNoContent(w, r, err)
}

// writeNoContent answers err when it is not nil, else 204 with no body.
func (h *Handler) writeNoContent(w http.ResponseWriter, r *http.Request, err error) {
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
	list = slices.DeleteFunc(list, func(ws project.Workspace) bool { return ws.Org != r.PathValue("org") })
	h.writeList(w, r, docs(list, workspaceDoc), err)
}

func teamDoc(t project.Team) map[string]any {
	return map[string]any{
		"id": t.ID, "type": "teams", "attributes": map[string]any{"name": t.Name},
		"relationships": map[string]any{"organization": map[string]any{"data": ref{ID: t.Org, Type: "organizations"}}},
		"links":         map[string]string{"self": "/api/v2/teams/" + t.ID},
	}
}

func (h *Handler) createTeam(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "teams", func(v *keel.Validation, res *reqResource) *string {
		return res.attrString(v, "Name")
	}, func(name *string) (project.Team, error) {
		return h.catalog.CreateTeam(r.Context(), r.PathValue("org"), deref(name))
	}, http.StatusCreated, teamDoc)
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
	serve(h, w, r, "team-projects", func(v *keel.Validation, res *reqResource) project.TeamAccess {
		return project.TeamAccess{
			ProjectID: res.relID(v, "ProjectID", "projects"), TeamID: res.relID(v, "TeamID", "teams"),
			Access: deref(res.attrString(v, "Access")),
		}
	}, func(in project.TeamAccess) (project.TeamAccess, error) {
		return h.catalog.SetTeamAccess(r.Context(), in.ProjectID, in.TeamID, in.Access)
	}, http.StatusCreated, accessDoc)
}

func (h *Handler) listTeamAccess(w http.ResponseWriter, r *http.Request) {
	list, err := h.catalog.TeamAccesses(r.Context(), r.URL.Query().Get("filter[project][id]"))
	h.writeList(w, r, docs(list, accessDoc), err)
}

func (h *Handler) removeTeamAccess(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.PathValue("id"), "_")
	if len(parts) != 3 || parts[0] != "tprj" {
		h.writeError(w, r, keel.ErrNotFound)
		return
	}
	h.writeNoContent(w, r, h.catalog.RemoveTeamAccess(r.Context(), parts[2], parts[1]))
}
