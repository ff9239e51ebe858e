package tfe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/policy"
)

// The shapes of a policy document, per the specification's table.
type policyShape struct {
	sets     bool // relationships.policy-sets (create, show)
	download bool // links.download (show, update, list)
}

var (
	shapeCreate = policyShape{sets: true}
	shapeShow   = policyShape{sets: true, download: true}
	shapeUpdate = policyShape{download: true}
	shapeList   = policyShape{download: true}
)

func policyDoc(p policy.Policy, shape policyShape) map[string]any {
	var updated any
	if p.UpdatedAt != nil {
		updated = timestamp(*p.UpdatedAt)
	}
	attrs := map[string]any{
		"name": p.Name, "description": p.Description, "kind": p.Kind,
		"enforce": p.Enforce, "enforcement-level": p.EnforcementLevel,
		"policy-set-count": len(p.PolicySetIDs), "updated-at": updated,
	}
	if p.Query != nil {
		attrs["query"] = *p.Query
	}
	rels := map[string]any{"organization": map[string]any{"data": ref{ID: p.Org, Type: "organizations"}}}
	if shape.sets {
		sets := make([]ref, 0, len(p.PolicySetIDs))
		for _, id := range p.PolicySetIDs {
			sets = append(sets, ref{ID: id, Type: "policy-sets"})
		}
		rels["policy-sets"] = map[string]any{"data": sets}
	}
	self := "/api/v2/policies/" + p.ID
	links := map[string]string{"self": self, "upload": self + "/upload"}
	if shape.download {
		links["download"] = self + "/download"
	}
	return map[string]any{"id": p.ID, "type": "policies", "attributes": attrs, "relationships": rels, "links": links}
}

// enforceAttr reads data.attributes.enforce.
func enforceAttr(v *keel.Validation, res *reqResource) *[]policy.Enforce {
	raw, ok := res.Attributes["enforce"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var list []struct {
		Path *string `json:"path"`
		Mode *string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		v.Add("data.attributes.enforce", "must be an array of {path, mode}")
		return nil
	}
	out := make([]policy.Enforce, len(list))
	for i, e := range list {
		if e.Path == nil {
			v.Add(fmt.Sprintf("data.attributes.enforce.%d.path", i), "is required")
		}
		out[i] = policy.Enforce{Path: deref(e.Path), Mode: deref(e.Mode)}
	}
	return &out
}

func (h *Handler) createPolicy(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "policies")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	in := policy.CreateInput{
		Name: res.attrString(&v, "name"), Description: res.attrString(&v, "description"),
		Kind: res.attrString(&v, "kind"), Query: res.attrString(&v, "query"),
		EnforcementLevel: res.attrString(&v, "enforcement-level"), Enforce: enforceAttr(&v, res),
		PolicySetIDs: res.relIDs(&v, "policy-sets", "policy-sets"),
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	p, err := h.policies.Create(r.Context(), r.PathValue("org"), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// The specification answers 200 (not 201) to a policy create.
	writeJSON(w, http.StatusOK, map[string]any{"data": policyDoc(p, shapeCreate)})
}

func (h *Handler) readPolicy(w http.ResponseWriter, r *http.Request) {
	p, err := h.policies.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := map[string]any{"data": policyDoc(p, shapeShow)}
	if inc, err := h.included(r, []policy.Policy{p}); err != nil {
		h.writeError(w, r, err)
		return
	} else if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

// included returns the policy sets of ps when the request asks for
// include=policy_sets, else nil.
func (h *Handler) included(r *http.Request, ps []policy.Policy) ([]any, error) {
	switch r.URL.Query().Get("include") {
	case "":
		return nil, nil
	case "policy_sets":
	default:
		return nil, keel.Invalid("include", "must be policy_sets")
	}
	out := []any{}
	seen := map[string]bool{}
	for _, p := range ps {
		for _, id := range p.PolicySetIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			set, err := h.policies.GetSet(r.Context(), id)
			if err != nil {
				return nil, err
			}
			members := make([]ref, 0, len(set.PolicyIDs))
			for _, m := range set.PolicyIDs {
				members = append(members, ref{ID: m, Type: "policies"})
			}
			out = append(out, map[string]any{
				"id": set.ID, "type": "policy-sets",
				"attributes":    map[string]any{"name": set.Name, "policy-count": len(set.PolicyIDs)},
				"relationships": map[string]any{"policies": map[string]any{"data": members}},
			})
		}
	}
	return out, nil
}

func (h *Handler) updatePolicy(w http.ResponseWriter, r *http.Request) {
	res, err := readDoc(w, r, "policies")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var v keel.Validation
	// data.attributes.name is ignored: a policy cannot be renamed.
	in := policy.UpdateInput{
		Description: res.attrString(&v, "description"), Query: res.attrString(&v, "query"),
		EnforcementLevel: res.attrString(&v, "enforcement-level"), Enforce: enforceAttr(&v, res),
	}
	if err := v.Err(); err != nil {
		h.writeError(w, r, err)
		return
	}
	p, err := h.policies.Update(r.Context(), r.PathValue("id"), in)
	h.writeData(w, r, http.StatusOK, err, func() any { return policyDoc(p, shapeUpdate) })
}

func (h *Handler) listPolicies(w http.ResponseWriter, r *http.Request) {
	number, size, err := pageQuery(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.policies.List(r.Context(), r.PathValue("org"), policy.ListOptions{
		PageNumber: number, PageSize: size, Search: r.URL.Query().Get("search[name]"),
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	data := make([]any, 0, len(page.Policies))
	for _, p := range page.Policies {
		data = append(data, policyDoc(p, shapeList))
	}
	pg := page.Pagination
	doc := map[string]any{
		"data":  data,
		"links": pageLinks(r, pg),
		"meta":  map[string]any{"pagination": paginationMeta(pg)},
	}
	if inc, err := h.included(r, page.Policies); err != nil {
		h.writeError(w, r, err)
		return
	} else if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

func (h *Handler) deletePolicy(w http.ResponseWriter, r *http.Request) {
	h.writeDeleted(w, r, h.policies.Delete(r.Context(), r.PathValue("id")))
}

// uploadPolicy stores the raw body; more than policy.MaxCodeSize bytes is
// 413 and nothing is saved. Success is 204 with no body.
func (h *Handler) uploadPolicy(w http.ResponseWriter, r *http.Request) {
	code, err := io.ReadAll(http.MaxBytesReader(w, r.Body, policy.MaxCodeSize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = fmt.Errorf("policy code larger than %d bytes: %w", policy.MaxCodeSize, keel.ErrTooLarge)
		} else {
			err = keel.Invalid("", "reading the body: %v", err)
		}
		h.writeError(w, r, err)
		return
	}
	h.writeDeleted(w, r, h.policies.Upload(r.Context(), r.PathValue("id"), code))
}

func (h *Handler) downloadPolicy(w http.ResponseWriter, r *http.Request) {
	code, err := h.policies.Download(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(code)
}
