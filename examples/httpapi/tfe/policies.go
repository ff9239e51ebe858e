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

// enforceAttr reads the attribute of Enforce, an array of {path, mode}; a
// path or mode not sent is "" (whether it is required is the domain's
// rule).
func enforceAttr(v *keel.Validation, res *reqResource) *[]policy.Enforce {
	raw := res.attr("Enforce")
	if raw == nil {
		return nil
	}
	var list []policy.Enforce
	if err := json.Unmarshal(raw, &list); err != nil {
		v.Add("Enforce", "must be an array of {path, mode}")
		return nil
	}
	return &list
}

func (h *Handler) createPolicy(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "policies", func(v *keel.Validation, res *reqResource) policy.CreateRequest {
		return policy.CreateRequest{
			Name: res.attrString(v, "Name"), Description: res.attrString(v, "Description"),
			Kind: res.attrString(v, "Kind"), Query: res.attrString(v, "Query"),
			EnforcementLevel: res.attrString(v, "EnforcementLevel"), Enforce: enforceAttr(v, res),
			PolicySetIDs: res.relIDs(v, "PolicySetIDs", "policy-sets"),
		}
	}, func(in policy.CreateRequest) (policy.Policy, error) {
		return h.policies.Create(r.Context(), r.PathValue("org"), in)
	}, http.StatusOK, // the specification answers 200 (not 201) to a policy create
		func(p policy.Policy) map[string]any { return policyDoc(p, shapeCreate) })
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
	switch param(r, "Include") {
	case "":
		return nil, nil
	case "policy_sets":
	default:
		return nil, keel.Invalid("Include", "must be policy_sets")
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
			out = append(out, setDoc(set))
		}
	}
	return out, nil
}

func (h *Handler) updatePolicy(w http.ResponseWriter, r *http.Request) {
	serve(h, w, r, "policies", func(v *keel.Validation, res *reqResource) policy.UpdateRequest {
		// A name sent is ignored: a policy cannot be renamed.
		return policy.UpdateRequest{
			Description: res.attrString(v, "Description"), Query: res.attrString(v, "Query"),
			EnforcementLevel: res.attrString(v, "EnforcementLevel"), Enforce: enforceAttr(v, res),
		}
	}, func(in policy.UpdateRequest) (policy.Policy, error) {
		return h.policies.Update(r.Context(), r.PathValue("id"), in)
	}, http.StatusOK, func(p policy.Policy) map[string]any { return policyDoc(p, shapeUpdate) })
}

func (h *Handler) listPolicies(w http.ResponseWriter, r *http.Request) {
	n, err := pageQuery(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.policies.List(r.Context(), r.PathValue("org"), policy.ListRequest{
		ListRequest: n.list(), Offset: n.offset(), Search: param(r, "Search"), FilterKind: param(r, "FilterKind"),
	})
	if err == nil {
		// After the list: the caller who may not manage the
		// organization's policies is answered 404 first.
		err = n.check()
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	doc := pageDoc(r, docs(page.Items, func(p policy.Policy) map[string]any { return policyDoc(p, shapeList) }), n.of(page.Matching))
	if inc, err := h.included(r, page.Items); err != nil {
		h.writeError(w, r, err)
		return
	} else if inc != nil {
		doc["included"] = inc
	}
	writeJSON(w, http.StatusOK, doc)
}

func (h *Handler) deletePolicy(w http.ResponseWriter, r *http.Request) {
	h.writeNoContent(w, r, h.policies.Delete(r.Context(), r.PathValue("id")))
}

// uploadPolicy stores the raw body; more than the policy service's
// MaxCodeBytes (10 MiB, less on etcd) is 413 and nothing is saved.
// Success is 204 with no body.
func (h *Handler) uploadPolicy(w http.ResponseWriter, r *http.Request) {
	most := h.policies.Limits().MaxCodeBytes
	code, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(most)))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = fmt.Errorf("policy code larger than %d bytes: %w", most, keel.KindTooLarge)
		} else {
			err = keel.Invalid("", "reading the body: %v", err)
		}
		h.writeError(w, r, err)
		return
	}
	h.writeNoContent(w, r, h.policies.Upload(r.Context(), r.PathValue("id"), code))
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
