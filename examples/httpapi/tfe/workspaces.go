package tfe

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
)

// workspaceSource is the source attribute of every workspace: keel has no
// web interface, so every workspace is created through the API.
const workspaceSource = "tfe-api"

func workspaceDoc(ws project.Workspace) map[string]any {
	st, p := ws.Settings, ws.Permissions
	var autoDestroyAt any
	if st.AutoDestroyAt != nil {
		autoDestroyAt = timestamp(*st.AutoDestroyAt)
	}
	own := *st.SettingOverwrites.ExecutionMode
	org, name := url.PathEscape(ws.Org), url.PathEscape(ws.Name)
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
			"operations":                    st.Operations,
			"setting-overwrites":            map[string]bool{"execution-mode": own, "agent-pool": own},
			"auto-destroy-at":               autoDestroyAt,
			"source":                        workspaceSource,
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
		"links": map[string]string{
			"self":      "/api/v2/organizations/" + org + "/workspaces/" + name,
			"self-html": "/app/" + org + "/workspaces/" + name,
		},
	}
}

// settingOverwrites reads the setting-overwrites object of a workspaces
// document: its execution-mode; agent-pool, a boolean too, says nothing
// to keel, which keeps no agent pools.
func settingOverwrites(v *keel.Validation, res *reqResource) *project.SettingOverwrites {
	raw := res.attr("SettingOverwrites")
	if raw == nil {
		return nil
	}
	var o struct {
		ExecutionMode *bool `json:"execution-mode"`
		AgentPool     *bool `json:"agent-pool"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		v.Add("SettingOverwrites", "must be an object of booleans (execution-mode, agent-pool)")
		return nil
	}
	return &project.SettingOverwrites{ExecutionMode: o.ExecutionMode}
}

// attrNullableTime reads the attribute of the Go name field, a time in
// RFC 3339 form or null: nil when absent, a zero time when null (the
// domain's "clear"); another value is a problem recorded in v.
func (res *reqResource) attrNullableTime(v *keel.Validation, field string) *time.Time {
	raw, ok := res.Attributes[locate(field).name]
	if !ok {
		return nil
	}
	if string(raw) == "null" {
		return &time.Time{}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		v.Add(field, "must be a time (RFC 3339) or null")
		return nil
	}
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		v.Add(field, "must be a time (RFC 3339) or null")
		return nil
	}
	return &at
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
		Operations:                 res.attrBool(v, "Operations"),
		SettingOverwrites:          settingOverwrites(v, res),
		AutoDestroyAt:              res.attrNullableTime(v, "AutoDestroyAt"),
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
		return h.catalog.CreateWorkspace(r.Context(), r.PathValue("org"), project.WorkspaceRequest{Name: in.name, ProjectID: new(in.projectID), WorkspaceSettings: in.settings})
	}, http.StatusCreated, workspaceDoc)
}

// workspace reads the workspace of the request: the path's {id}, or the
// workspace {name} of the organization {org}.
func (h *Handler) workspace(r *http.Request) (project.Workspace, error) {
	if id := r.PathValue("id"); id != "" {
		return h.catalog.GetWorkspace(r.Context(), id)
	}
	return h.catalog.GetWorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
}

// workspaceID returns the id of the workspace of the request: the path's
// {id}, or the id of the workspace {name} of the organization {org}.
func (h *Handler) workspaceID(r *http.Request) (string, error) {
	if id := r.PathValue("id"); id != "" {
		return id, nil
	}
	ws, err := h.catalog.GetWorkspaceByName(r.Context(), r.PathValue("org"), r.PathValue("name"))
	return ws.ID, err
}

func (h *Handler) readWorkspace(w http.ResponseWriter, r *http.Request) {
	ws, err := h.workspace(r)
	var inc []any
	if err == nil {
		inc, err = h.workspaceIncluded(r, []project.Workspace{ws})
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := map[string]any{"data": workspaceDoc(ws)}
	if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

// workspaceIncludes are the values of include a workspace read or list
// accepts: go-tfe's. organization and project add the workspaces'
// organization and project as included resources (those the caller may
// read); the others name what keel does not keep (runs, state, tags,
// readmes, locks) and add nothing.
var workspaceIncludes = []string{
	"organization", "project", "current_configuration_version", "current_configuration_version.ingress_attributes",
	"current_run", "current_run.plan", "current_run.configuration_version",
	"current_run.configuration_version.ingress_attributes", "effective_tag_bindings", "locked_by", "readme",
	"outputs", "current-state-version",
}

// workspaceIncluded returns the included resources that the request's
// include (comma-separated) asks for with the workspaces list, or nil when
// it asks for none; a value not in workspaceIncludes is a problem of the
// parameter include.
func (h *Handler) workspaceIncluded(r *http.Request, list []project.Workspace) ([]any, error) {
	include := param(r, "Include")
	if include == "" {
		return nil, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(include, ",") {
		if !slices.Contains(workspaceIncludes, name) {
			return nil, keel.Invalid("Include", "must be among %s", strings.Join(workspaceIncludes, ", "))
		}
		want[name] = true
	}
	out := []any{}
	seen := map[string]bool{}
	for _, ws := range list {
		if want["organization"] && !seen["org/"+ws.Org] {
			seen["org/"+ws.Org] = true
			o, err := h.catalog.GetOrganization(r.Context(), ws.Org)
			switch {
			case err == nil:
				out = append(out, orgDoc(o))
			case !errors.Is(err, keel.KindNotFound): // one the caller may not read is left out
				return nil, err
			}
		}
		if want["project"] && !seen["prj/"+ws.ProjectID] {
			seen["prj/"+ws.ProjectID] = true
			p, err := h.catalog.Get(r.Context(), ws.ProjectID)
			switch {
			case err == nil:
				out = append(out, fullProjectDoc(p))
			case !errors.Is(err, keel.KindNotFound):
				return nil, err
			}
		}
	}
	return out, nil
}

// listRemoteStateConsumers answers the workspaces that may read the
// state of a visible workspace: none, as keel keeps no state (HCP
// Terraform answers its list; the tfe provider reads it after every
// workspace read).
func (h *Handler) listRemoteStateConsumers(w http.ResponseWriter, r *http.Request) {
	_, err := h.catalog.GetWorkspace(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageDoc(r, []any{}, newPagination(1, project.DefaultPageSize, 0)))
}

// updateWorkspace renames, moves (relationships.project) and changes the
// settings of a workspace, in one operation of the catalog.
func (h *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request) {
	id, err := h.workspaceID(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	serve(h, w, r, "workspaces", func(v *keel.Validation, res *reqResource) project.WorkspaceRequest {
		in := project.WorkspaceRequest{Name: res.attrString(v, "Name"), WorkspaceSettings: workspaceSettings(v, res)}
		if prj := res.relID(v, "ProjectID", "projects"); prj != "" {
			in.ProjectID = &prj
		}
		return in
	}, func(in project.WorkspaceRequest) (project.Workspace, error) {
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
// caller may read: search[name], search[wildcard-name],
// filter[project][id], page[number], page[size], include.
func (h *Handler) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err == nil {
		err = n.check()
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.catalog.ListWorkspaces(r.Context(), r.PathValue("org"), project.ListWorkspacesRequest{
		ListRequest: n.list(), Offset: n.offset(), Search: param(r, "Search"), WildcardName: param(r, "WildcardName"),
		ProjectID: r.URL.Query().Get("filter[project][id]"),
	})
	var inc []any
	if err == nil {
		inc, err = h.workspaceIncluded(r, page.Items)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := pageDoc(r, docs(page.Items, workspaceDoc), n.of(page.Matching))
	if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}
