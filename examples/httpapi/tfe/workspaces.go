package tfe

import (
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

func workspaceDoc(ws project.Workspace) map[string]any {
	st, p := ws.Settings, ws.Permissions
	return map[string]any{
		"id": ws.ID, "type": "workspaces",
		"attributes": map[string]any{
			"name": ws.Name, "created-at": timestamp(ws.CreatedAt), "updated-at": timestamp(ws.UpdatedAt),
			"description":                   st.Description,
			"allow-destroy-plan":            st.AllowDestroyPlan,
			"auto-apply":                    st.AutoApply,
			"auto-apply-run-trigger":        st.AutoApplyRunTrigger,
			"assessments-enabled":           st.AssessmentsEnabled,
			"global-remote-state":           st.GlobalRemoteState,
			"queue-all-runs":                st.QueueAllRuns,
			"file-triggers-enabled":         st.FileTriggersEnabled,
			"speculative-enabled":           st.SpeculativeEnabled,
			"structured-run-output-enabled": st.StructuredRunOutputEnabled,
			"execution-mode":                st.ExecutionMode,
			"operations":                    *st.ExecutionMode != project.ExecutionLocal,
			"terraform-version":             st.TerraformVersion,
			"working-directory":             st.WorkingDirectory,
			"source-name":                   st.SourceName,
			"source-url":                    st.SourceURL,
			"trigger-prefixes":              st.TriggerPrefixes,
			"trigger-patterns":              st.TriggerPatterns,
			"environment":                   "default",
			"locked":                        false,
			"resource-count":                0,
			"tag-names":                     []string{},
			"vcs-repo":                      nil,
			"actions":                       map[string]bool{"is-destroyable": true},
			"permissions": map[string]bool{
				"can-update": p.CanUpdate, "can-destroy": p.CanDestroy, "can-force-delete": p.CanForceDelete,
				"can-read-settings": true,
			},
		},
		"relationships": map[string]any{
			"organization": map[string]any{"data": ref{ID: ws.Org, Type: "organizations"}},
			"project":      map[string]any{"data": ref{ID: ws.ProjectID, Type: "projects"}},
		},
		"links": map[string]string{"self": "/api/v2/workspaces/" + ws.ID},
	}
}

// workspaceSettings reads the settings attributes of a workspaces
// document.
func workspaceSettings(v *keel.Validation, res *reqResource) project.WorkspaceSettings {
	return project.WorkspaceSettings{
		Description:                res.attrString(v, "Description"),
		AllowDestroyPlan:           res.attrBool(v, "AllowDestroyPlan"),
		AutoApply:                  res.attrBool(v, "AutoApply"),
		AutoApplyRunTrigger:        res.attrBool(v, "AutoApplyRunTrigger"),
		AssessmentsEnabled:         res.attrBool(v, "AssessmentsEnabled"),
		GlobalRemoteState:          res.attrBool(v, "GlobalRemoteState"),
		QueueAllRuns:               res.attrBool(v, "QueueAllRuns"),
		FileTriggersEnabled:        res.attrBool(v, "FileTriggersEnabled"),
		SpeculativeEnabled:         res.attrBool(v, "SpeculativeEnabled"),
		StructuredRunOutputEnabled: res.attrBool(v, "StructuredRunOutputEnabled"),
		ExecutionMode:              res.attrString(v, "ExecutionMode"),
		TerraformVersion:           res.attrString(v, "TerraformVersion"),
		WorkingDirectory:           res.attrString(v, "WorkingDirectory"),
		SourceName:                 res.attrString(v, "SourceName"),
		SourceURL:                  res.attrString(v, "SourceURL"),
		TriggerPrefixes:            res.attrStrings(v, "TriggerPrefixes"),
		TriggerPatterns:            res.attrStrings(v, "TriggerPatterns"),
	}
}

func (h *Handler) createWorkspace(w http.ResponseWriter, r *http.Request) {
	type input struct {
		name      *string
		projectID string
		settings  project.WorkspaceSettings
	}
	serve(h, w, r, "workspaces", func(v *keel.Validation, res *reqResource) input {
		return input{res.attrString(v, "Name"), res.relID(v, "ProjectID", "projects"), workspaceSettings(v, res)}
	}, func(in input) (project.Workspace, error) {
		return h.catalog.CreateWorkspace(r.Context(), r.PathValue("org"), deref(in.name), in.projectID, &in.settings)
	}, http.StatusCreated, workspaceDoc)
}

// workspaceID returns the id of the workspace of the request: the path's
// {id}, or the workspace {name} of the organization {org}.
func (h *Handler) workspaceID(r *http.Request) (string, error) {
	if id := r.PathValue("id"); id != "" {
		return id, nil
	}
	return h.catalog.WorkspaceID(r.Context(), r.PathValue("org"), r.PathValue("name"))
}

func (h *Handler) readWorkspace(w http.ResponseWriter, r *http.Request) {
	id, err := h.workspaceID(r)
	var ws project.Workspace
	if err == nil {
		ws, err = h.catalog.Workspace(r.Context(), id)
	}
	h.writeData(w, r, http.StatusOK, err, func() any { return workspaceDoc(ws) })
}

// listRemoteStateConsumers answers the workspaces that may read the
// state of a visible workspace: none, as keel keeps no state (HCP
// Terraform answers its list; the tfe provider reads it after every
// workspace read).
func (h *Handler) listRemoteStateConsumers(w http.ResponseWriter, r *http.Request) {
	_, err := h.catalog.Workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageDoc(r, []any{}, keel.NewPagination(1, project.DefaultPageSize, 0)))
}

// updateWorkspace renames, moves (relationships.project) and changes the
// settings of a workspace, in one operation of the catalog.
func (h *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request) {
	id, err := h.workspaceID(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	serve(h, w, r, "workspaces", func(v *keel.Validation, res *reqResource) project.WorkspaceInput {
		in := project.WorkspaceInput{Name: res.attrString(v, "Name"), WorkspaceSettings: workspaceSettings(v, res)}
		if prj := res.relID(v, "ProjectID", "projects"); prj != "" {
			in.ProjectID = &prj
		}
		return in
	}, func(in project.WorkspaceInput) (project.Workspace, error) {
		return h.catalog.UpdateWorkspace(r.Context(), id, in)
	}, http.StatusOK, workspaceDoc)
}

// deleteWorkspace serves DELETE and the safe-delete and force-delete
// actions: keel keeps no state, so every delete is safe.
func (h *Handler) deleteWorkspace(w http.ResponseWriter, r *http.Request) {
	id, err := h.workspaceID(r)
	if err == nil {
		err = h.catalog.DeleteWorkspace(r.Context(), id)
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

// listWorkspaces lists a page of the workspaces of the organization the
// caller may read: search[name], filter[project][id], page[number],
// page[size].
func (h *Handler) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	number, size, err := pageQuery(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.catalog.ListWorkspaces(r.Context(), r.PathValue("org"), project.WorkspaceListOptions{
		PageNumber: number, PageSize: size, Search: param(r, "Search"),
		ProjectID: r.URL.Query().Get("filter[project][id]"),
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageDoc(r, docs(page.Workspaces, workspaceDoc), page.Pagination))
}
