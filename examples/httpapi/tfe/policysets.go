package tfe

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/policy"
)

// setRelations are the to-many relationships of a policy set document:
// the kind of member, the relationship's name (also the path segment of
// /policy-sets/:id/relationships/<name>) and its members' type.
var setRelations = []struct {
	members policy.SetMembers
	name    string
	typ     string
}{
	{policy.SetPolicies, "policies", "policies"},
	{policy.SetWorkspaces, "workspaces", "workspaces"},
	{policy.SetProjects, "projects", "projects"},
	{policy.SetWorkspaceExclusions, "workspace-exclusions", "workspaces"},
}

// setIncludes are the values of include a policy set request accepts, as
// go-tfe sends them; only policies are rendered as included resources.
var setIncludes = []string{"policies", "workspaces", "projects", "workspace_exclusions", "project_exclusions", "current_version", "newest_version"}

// setDoc renders a policy set with its members and HCP Terraform's
// attributes.
func setDoc(p policy.PolicySet) map[string]any {
	var created, updated any
	if !p.CreatedAt.IsZero() {
		created = timestamp(p.CreatedAt)
	}
	if !p.UpdatedAt.IsZero() {
		updated = timestamp(p.UpdatedAt)
	}
	attrs := map[string]any{
		"name": p.Name, "description": p.Description, "kind": p.Kind, "global": p.Global,
		"overridable": p.Overridable, "agent-enabled": p.AgentEnabled,
		"policy-tool-version": p.PolicyToolVersion, "policy-update-patterns": p.PolicyUpdatePatterns,
		"policies-path": p.PoliciesPath, "versioned": false,
		"policy-count": len(p.PolicyIDs), "workspace-count": len(p.WorkspaceIDs), "project-count": len(p.ProjectIDs),
		"created-at": created, "updated-at": updated,
	}
	rels := map[string]any{"organization": orgRel(p.Org)}
	for _, rel := range setRelations {
		ids := p.Members(rel.members)
		data := make([]ref, 0, len(ids))
		for _, id := range ids {
			data = append(data, ref{ID: id, Type: rel.typ})
		}
		rels[rel.name] = map[string]any{"data": data}
	}
	return map[string]any{
		"id": p.ID, "type": "policy-sets", "attributes": attrs, "relationships": rels,
		"links": map[string]string{"self": "/api/v2/policy-sets/" + p.ID},
	}
}

// setSettings reads the settings of a policy-sets document, those of a
// create and an update alike. A vcs-repo is refused: keel keeps no VCS
// connections.
func setSettings(v *keel.Validation, res *reqResource) policy.UpdateSetRequest {
	if res.attr("VCSRepo") != nil {
		v.Add("VCSRepo", "is not supported: keel keeps no VCS connections")
	}
	var patterns *[]string
	if l := res.attrStrings(v, "PolicyUpdatePatterns"); l != nil {
		patterns = l
	}
	return policy.UpdateSetRequest{
		Name: res.attrString(v, "Name"), Description: res.attrString(v, "Description"),
		Global: res.attrBool(v, "Global"), Overridable: res.attrBool(v, "Overridable"),
		AgentEnabled: res.attrBool(v, "AgentEnabled"), PolicyToolVersion: res.attrString(v, "PolicyToolVersion"),
		PolicyUpdatePatterns: patterns, PoliciesPath: res.attrString(v, "PoliciesPath"),
	}
}

func (h *Handler) createSet(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "policy-sets", func(v *keel.Validation, res *reqResource) policy.CreateSetRequest {
		u := setSettings(v, res)
		return policy.CreateSetRequest{
			Name: u.Name, Description: u.Description, Kind: res.attrString(v, "Kind"), Global: u.Global,
			Overridable: u.Overridable, AgentEnabled: u.AgentEnabled, PolicyToolVersion: u.PolicyToolVersion,
			PolicyUpdatePatterns: u.PolicyUpdatePatterns, PoliciesPath: u.PoliciesPath,
			PolicyIDs:             res.relIDs(v, "PolicyIDs", "policies"),
			WorkspaceIDs:          res.relIDs(v, "WorkspaceIDs", "workspaces"),
			ProjectIDs:            res.relIDs(v, "ProjectIDs", "projects"),
			WorkspaceExclusionIDs: res.relIDs(v, "WorkspaceExclusionIDs", "workspaces"),
		}
	}, func(in policy.CreateSetRequest) (policy.PolicySet, error) {
		return h.policies.CreateSet(r.Context(), r.PathValue("org"), in)
	}, http.StatusCreated, setDoc)
}

func (h *Handler) updateSet(w http.ResponseWriter, r *http.Request) {
	// A kind sent is ignored: it cannot change.
	serve(h, w, r, "policy-sets", setSettings, func(in policy.UpdateSetRequest) (policy.PolicySet, error) {
		return h.policies.UpdateSet(r.Context(), r.PathValue("id"), in)
	}, http.StatusOK, setDoc)
}

func (h *Handler) readSet(w http.ResponseWriter, r *http.Request) {
	set, err := h.policies.GetSet(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := map[string]any{"data": setDoc(set)}
	if inc, err := h.setIncluded(r, []policy.PolicySet{set}); err != nil {
		h.writeError(w, r, err)
		return
	} else if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

func (h *Handler) listSets(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.policies.ListSets(r.Context(), r.PathValue("org"), policy.ListSetsRequest{
		ListRequest: n.list(), Offset: n.offset(), Search: param(r, "Search"), FilterKind: param(r, "FilterKind"),
	})
	if err == nil {
		err = n.check() // after the list, as for policies
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := pageDoc(r, docs(page.Items, setDoc), n.of(page.Matching))
	if inc, err := h.setIncluded(r, page.Items); err != nil {
		h.writeError(w, r, err)
		return
	} else if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

// setIncluded returns the included resources a policy set request asks
// for (include, comma-separated): the policies of sets for "policies";
// the other values go-tfe sends are accepted and include nothing (their
// identifiers are in the relationships). nil without include.
func (h *Handler) setIncluded(r *http.Request, sets []policy.PolicySet) ([]any, error) {
	raw := param(r, "Include")
	if raw == "" {
		return nil, nil
	}
	policies := false
	for _, inc := range strings.Split(raw, ",") {
		switch {
		case inc == "policies":
			policies = true
		case !slices.Contains(setIncludes, inc):
			return nil, keel.Invalid("Include", "must be among %s", strings.Join(setIncludes, ", "))
		}
	}
	out := []any{}
	if !policies {
		return out, nil
	}
	seen := map[string]bool{}
	for _, set := range sets {
		for _, id := range set.PolicyIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			p, err := h.policies.Get(r.Context(), id)
			if err != nil {
				return nil, err
			}
			out = append(out, policyDoc(p, shapeList))
		}
	}
	return out, nil
}

func (h *Handler) deleteSet(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.policies.DeleteSet(r.Context(), r.PathValue("id")))
}

// setMembers serves POST (add) and DELETE (remove) of
// /policy-sets/:id/relationships/<name>: a document whose data is an
// array of resource identifiers of the relationship's type. 204.
func (h *Handler) setMembers(add bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("rel")
		i := -1
		for j, rel := range setRelations {
			if rel.name == name {
				i = j
			}
		}
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		rel := setRelations[i]
		ids, err := readRefs(w, r, rel.typ)
		if err != nil {
			// The set is not revealed by the body's problems: a caller
			// who may not see it is answered 404 whatever the body.
			if _, hidden := h.policies.GetSet(r.Context(), r.PathValue("id")); hidden != nil {
				err = hidden
			}
		} else {
			if add {
				err = h.policies.AddSetMembers(r.Context(), r.PathValue("id"), rel.members, ids)
			} else {
				err = h.policies.RemoveSetMembers(r.Context(), r.PathValue("id"), rel.members, ids)
			}
		}
		h.writeNoContent(w, r, err)
	}
}

// readRefs decodes a document whose data is an array of resource
// identifiers of type typ (a single identifier is taken as an array of
// one), and returns their ids. A malformed body or a wrong type is
// keel.KindInvalid on its pointer.
func readRefs(w http.ResponseWriter, r *http.Request, typ string) ([]string, error) {
	var doc struct {
		Data json.RawMessage `json:"data"`
	}
	if err := decodeBody(w, r, &doc); err != nil {
		return nil, err
	}
	if len(doc.Data) == 0 || string(doc.Data) == "null" {
		return nil, keel.Invalid("/data", "is required")
	}
	var many []ref
	if err := json.Unmarshal(doc.Data, &many); err != nil {
		var one ref
		if err := json.Unmarshal(doc.Data, &one); err != nil {
			return nil, keel.Invalid("/data", "must be resource identifiers")
		}
		many = []ref{one}
	}
	var v keel.Validation
	ids := make([]string, 0, len(many))
	for i, m := range many {
		if m.Type != typ {
			v.Add("/data/"+strconv.Itoa(i)+"/type", "must be %s", typ)
		}
		ids = append(ids, m.ID)
	}
	return ids, v.Err()
}
