package tfe

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

func teamDoc(t project.Team) map[string]any {
	return map[string]any{
		"id": t.ID, "type": "teams",
		"attributes": map[string]any{
			"name": t.Name, "visibility": t.Settings.Visibility, "sso-team-id": t.Settings.SSOTeamID,
			"allow-member-token-management": t.Settings.AllowMemberTokenManagement,
			"organization-access":           t.Settings.OrganizationAccess,
			"users-count":                   0,
			"permissions":                   map[string]bool{"can-destroy": t.CanDestroy, "can-update-membership": t.CanUpdate},
		},
		"relationships": map[string]any{"organization": map[string]any{"data": ref{ID: t.Org, Type: "organizations"}}},
		"links":         map[string]string{"self": "/api/v2/teams/" + t.ID},
	}
}

// teamSettings reads the settings attributes of a teams document.
func teamSettings(v *keel.Validation, res *reqResource) project.TeamSettings {
	s := project.TeamSettings{
		Visibility:                 res.attrString(v, "Visibility"),
		AllowMemberTokenManagement: res.attrBool(v, "AllowMemberTokenManagement"),
		SSOTeamID:                  res.attrString(v, "SSOTeamID"),
	}
	if raw := res.attr("OrganizationAccess"); raw != nil {
		if err := json.Unmarshal(raw, &s.OrganizationAccess); err != nil {
			v.Add("OrganizationAccess", "must be an object of booleans")
		}
	}
	return s
}

func (h *Handler) createTeam(w http.ResponseWriter, r *http.Request) {
	type input struct {
		name     *string
		settings project.TeamSettings
	}
	serve(h, w, r, "teams", func(v *keel.Validation, res *reqResource) input {
		return input{res.attrString(v, "Name"), teamSettings(v, res)}
	}, func(in input) (project.Team, error) {
		return h.catalog.CreateTeam(r.Context(), r.PathValue("org"), project.TeamRequest{Name: in.name, TeamSettings: in.settings})
	}, http.StatusCreated, teamDoc)
}

// listTeams answers the teams of an organization, a page at a time;
// filter[names] (comma-separated) keeps the teams of those names, as the
// tfe provider's import and team data source ask, and q those whose name
// holds it.
func (h *Handler) listTeams(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err == nil {
		err = n.check()
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var names []string
	if f := r.URL.Query().Get("filter[names]"); f != "" {
		names = strings.Split(f, ",")
	}
	page, err := h.catalog.ListTeams(r.Context(), r.PathValue("org"), project.ListTeamsRequest{
		ListRequest: n.list(), Offset: n.offset(), Names: names, Query: r.URL.Query().Get("q"),
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageDoc(r, docs(page.Items, teamDoc), n.of(page.Matching)))
}

func (h *Handler) readTeam(w http.ResponseWriter, r *http.Request) {
	t, err := h.catalog.GetTeam(r.Context(), r.PathValue("id"))
	h.writeData(w, r, http.StatusOK, err, func() any { return teamDoc(t) })
}

func (h *Handler) updateTeam(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "teams", func(v *keel.Validation, res *reqResource) project.TeamRequest {
		return project.TeamRequest{Name: res.attrString(v, "Name"), TeamSettings: teamSettings(v, res)}
	}, func(in project.TeamRequest) (project.Team, error) {
		return h.catalog.UpdateTeam(r.Context(), r.PathValue("id"), in)
	}, http.StatusOK, teamDoc)
}

func (h *Handler) deleteTeam(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.catalog.DeleteTeam(r.Context(), r.PathValue("id")))
}

// accessID names a team's access to a project: "tprj_<team>_<project>"
// (ids hold no "_").
func accessID(a project.TeamAccess) string { return "tprj_" + a.TeamID + "_" + a.ProjectID }

// parseAccessID returns the team and the project of an access id; an id
// of another form names no access (not found).
func parseAccessID(id string) (team, prj string, err error) {
	parts := strings.Split(id, "_")
	if len(parts) != 3 || parts[0] != "tprj" {
		return "", "", keel.KindNotFound
	}
	return parts[1], parts[2], nil
}

func accessDoc(a project.TeamAccess) map[string]any {
	attrs := map[string]any{"access": a.Access}
	if p := a.ProjectAccess; p != nil {
		attrs["project-access"] = map[string]string{"settings": p.Settings, "teams": p.Teams, "variable-sets": p.VariableSets}
	}
	if w := a.WorkspaceAccess; w != nil {
		attrs["workspace-access"] = map[string]any{
			"runs": w.Runs, "sentinel-mocks": w.SentinelMocks, "state-versions": w.StateVersions, "variables": w.Variables,
			"create": w.Create, "locking": w.Locking, "move": w.Move, "delete": w.Delete, "run-tasks": w.RunTasks,
			"policy-overrides": w.PolicyOverrides,
		}
	}
	return map[string]any{
		"id": accessID(a), "type": "team-projects", "attributes": attrs,
		"relationships": map[string]any{
			"team":    map[string]any{"data": ref{ID: a.TeamID, Type: "teams"}},
			"project": map[string]any{"data": ref{ID: a.ProjectID, Type: "projects"}},
		},
		"links": map[string]string{"self": "/api/v2/team-projects/" + accessID(a)},
	}
}

// customAccess reads the project-access and workspace-access objects of
// a team-projects document into a.
func customAccess(v *keel.Validation, res *reqResource, a *project.TeamAccess) {
	if raw := res.attr("ProjectAccess"); raw != nil {
		var p struct {
			Settings     string `json:"settings"`
			Teams        string `json:"teams"`
			VariableSets string `json:"variable-sets"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			v.Add("ProjectAccess", "must be an object of strings")
		}
		a.ProjectAccess = &project.ProjectAccess{Settings: p.Settings, Teams: p.Teams, VariableSets: p.VariableSets}
	}
	if raw := res.attr("WorkspaceAccess"); raw != nil {
		var w struct {
			Runs            string `json:"runs"`
			SentinelMocks   string `json:"sentinel-mocks"`
			StateVersions   string `json:"state-versions"`
			Variables       string `json:"variables"`
			Create          bool   `json:"create"`
			Locking         bool   `json:"locking"`
			Move            bool   `json:"move"`
			Delete          bool   `json:"delete"`
			RunTasks        bool   `json:"run-tasks"`
			PolicyOverrides bool   `json:"policy-overrides"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			v.Add("WorkspaceAccess", "must be an object of the workspace permissions")
		}
		a.WorkspaceAccess = &project.WorkspaceAccess{
			Runs: w.Runs, SentinelMocks: w.SentinelMocks, StateVersions: w.StateVersions, Variables: w.Variables,
			Create: w.Create, Locking: w.Locking, Move: w.Move, Delete: w.Delete, RunTasks: w.RunTasks, PolicyOverrides: w.PolicyOverrides,
		}
	}
}

func (h *Handler) addTeamAccess(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "team-projects", func(v *keel.Validation, res *reqResource) project.TeamAccess {
		a := project.TeamAccess{
			ProjectID: res.relID(v, "ProjectID", "projects"), TeamID: res.relID(v, "TeamID", "teams"),
			Access: deref(res.attrString(v, "Access")),
		}
		customAccess(v, res, &a)
		return a
	}, func(in project.TeamAccess) (project.TeamAccess, error) {
		return h.catalog.CreateTeamAccess(r.Context(), in)
	}, http.StatusCreated, accessDoc)
}

func (h *Handler) readTeamAccess(w http.ResponseWriter, r *http.Request) {
	team, prj, err := parseAccessID(r.PathValue("id"))
	var a project.TeamAccess
	if err == nil {
		a, err = h.catalog.GetTeamAccess(r.Context(), prj, team)
	}
	h.writeData(w, r, http.StatusOK, err, func() any { return accessDoc(a) })
}

func (h *Handler) updateTeamAccess(w http.ResponseWriter, r *http.Request) {
	team, prj, err := parseAccessID(r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	serve(h, w, r, "team-projects", func(v *keel.Validation, res *reqResource) project.TeamAccess {
		a := project.TeamAccess{ProjectID: prj, TeamID: team, Access: deref(res.attrString(v, "Access"))}
		customAccess(v, res, &a)
		return a
	}, func(in project.TeamAccess) (project.TeamAccess, error) {
		return h.catalog.UpdateTeamAccess(r.Context(), in)
	}, http.StatusOK, accessDoc)
}

// listTeamAccess answers a page of the teams with access to the project
// filter[project][id].
func (h *Handler) listTeamAccess(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err == nil {
		err = n.check()
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.catalog.ListTeamAccesses(r.Context(), r.URL.Query().Get("filter[project][id]"),
		project.ListTeamAccessesRequest{ListRequest: n.list(), Offset: n.offset()})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageDoc(r, docs(page.Items, accessDoc), n.of(page.Matching)))
}

func (h *Handler) removeTeamAccess(w http.ResponseWriter, r *http.Request) {
	team, prj, err := parseAccessID(r.PathValue("id"))
	if err == nil {
		err = h.catalog.DeleteTeamAccess(r.Context(), prj, team)
	}
	h.writeNoContent(w, r, err)
}
