package vault

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
)

// registerIdentity adds the nine identity group endpoints, when the
// Handler has identity groups:
//
//	POST, PUT     /v1/identity/group             create, or update by id or name
//	GET           /v1/identity/group/id/:id      read
//	POST, PUT     /v1/identity/group/id/:id      update
//	DELETE        /v1/identity/group/id/:id      delete
//	LIST          /v1/identity/group/id          list ids (or GET with list=true)
//	POST, PUT     /v1/identity/group/name/:name  create or update
//	GET           /v1/identity/group/name/:name  read
//	DELETE        /v1/identity/group/name/:name  delete
//	LIST          /v1/identity/group/name        list names (or GET with list=true)
//
// Every write answers 200 with data {id, name}, as the service's document
// states for creates and updates alike (Vault itself answers an update
// with 204); an update by an unknown id answers 400
// "invalid group ID"; a delete answers 204, the group existing or not; a
// missing read and an empty list answer 404 {"errors":[]}.
func (h *Handler) registerIdentity(mux *http.ServeMux) {
	if h.groups == nil {
		return
	}
	for _, method := range []string{"POST", "PUT"} {
		mux.HandleFunc(method+" /v1/identity/group", h.groupWrite)
		mux.HandleFunc(method+" /v1/identity/group/id/{id}", h.groupWriteByID)
		mux.HandleFunc(method+" /v1/identity/group/name/{name...}", h.groupWriteByName)
	}
	for _, p := range []string{"/v1/identity/group/id", "/v1/identity/group/id/{$}"} {
		mux.HandleFunc("LIST "+p, h.groupListIDs)
		mux.HandleFunc("GET "+p, h.groupListIDs)
	}
	mux.HandleFunc("LIST /v1/identity/group/name", h.groupListNames)
	mux.HandleFunc("LIST /v1/identity/group/name/{$}", h.groupListNames)
	mux.HandleFunc("GET /v1/identity/group/name", h.groupListNames)
	mux.HandleFunc("GET /v1/identity/group/id/{id}", h.groupReadByID)
	mux.HandleFunc("GET /v1/identity/group/name/{name...}", h.groupReadByName)
	mux.HandleFunc("DELETE /v1/identity/group/id/{id}", h.groupDeleteByID)
	mux.HandleFunc("DELETE /v1/identity/group/name/{name...}", h.groupDeleteByName)
}

// groupBody is the body of the group writes. Lists may be JSON arrays or
// comma-separated strings, and metadata an object or a list of "k=v", as
// Vault's field types accept.
type groupBody struct {
	ID              string        `json:"id"`
	Name            *string       `json:"name"`
	Type            *string       `json:"type"`
	Metadata        *kvPairs      `json:"metadata"`
	Policies        *commaStrings `json:"policies"`
	MemberGroupIDs  *commaStrings `json:"member_group_ids"`
	MemberEntityIDs *commaStrings `json:"member_entity_ids"`
}

func (b groupBody) input() identity.Input {
	in := identity.Input{Name: b.Name, Type: b.Type}
	if b.Metadata != nil {
		m := map[string]string(*b.Metadata)
		in.Metadata = &m
	}
	in.Policies = b.Policies.list()
	in.MemberGroupIDs = b.MemberGroupIDs.list()
	in.MemberEntityIDs = b.MemberEntityIDs.list()
	return in
}

// commaStrings is Vault's TypeCommaStringSlice: an array of strings, or one
// string of comma-separated values.
type commaStrings []string

func (c *commaStrings) list() *[]string {
	if c == nil {
		return nil
	}
	s := []string(*c)
	if s == nil {
		s = []string{}
	}
	return &s
}

func (c *commaStrings) UnmarshalJSON(raw []byte) error {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		*c = commaStrings{}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*c = append(*c, part)
			}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("expected a list of strings or a comma-separated string")
	}
	*c = commaStrings(list)
	return nil
}

// kvPairs is Vault's TypeKVPairs: an object of strings, or a list of
// "key=value" strings.
type kvPairs map[string]string

func (p *kvPairs) UnmarshalJSON(raw []byte) error {
	m := map[string]string{}
	if err := json.Unmarshal(raw, &m); err == nil {
		*p = m
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("expected an object of strings or a list of key=value strings")
	}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("invalid key value pair %q", kv)
		}
		m[k] = v
	}
	*p = m
	return nil
}

// readGroupBody decodes the body; a "null" member counts as not sent.
func readGroupBody(w http.ResponseWriter, r *http.Request) (groupBody, error) {
	var b groupBody
	if err := decodeBody(w, r, &b); err != nil {
		return b, err
	}
	return b, nil
}

func (h *Handler) groupWrite(w http.ResponseWriter, r *http.Request) {
	b, err := readGroupBody(w, r)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	res, err := h.groups.Upsert(r.Context(), b.ID, b.input())
	if keel.KindOf(err) == keel.KindNotFound {
		writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{"invalid group ID"}})
		return
	}
	writeGroupResult(w, res, err)
}

func (h *Handler) groupWriteByID(w http.ResponseWriter, r *http.Request) {
	b, err := readGroupBody(w, r)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	res, err := h.groups.UpdateByID(r.Context(), r.PathValue("id"), b.input())
	if keel.KindOf(err) == keel.KindNotFound {
		writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{"invalid group ID"}})
		return
	}
	writeGroupResult(w, res, err)
}

func (h *Handler) groupWriteByName(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" {
		writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{"empty group name"}})
		return
	}
	b, err := readGroupBody(w, r)
	if err != nil {
		writeGroupError(w, err)
		return
	}
	res, err := h.groups.UpsertByName(r.Context(), name, b.input())
	writeGroupResult(w, res, err)
}

// writeGroupResult answers a write: 200 with the group's id and name,
// whether it created the group or updated it.
func writeGroupResult(w http.ResponseWriter, res identity.Result, err error) {
	if err != nil {
		writeGroupError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{"id": res.ID, "name": res.Name}))
}

func (h *Handler) groupReadByID(w http.ResponseWriter, r *http.Request) {
	if isList(r) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
		return
	}
	g, err := h.groups.ReadByID(r.Context(), r.PathValue("id"))
	writeGroup(w, g, err)
}

func (h *Handler) groupReadByName(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" {
		h.groupListNames(w, r)
		return
	}
	if isList(r) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
		return
	}
	g, err := h.groups.ReadByName(r.Context(), name)
	writeGroup(w, g, err)
}

// writeGroup answers a read: the group's fields in data, or 404 with an
// empty errors list. member_group_ids and parent_group_ids are null when
// empty, as Vault's; alias is an empty object.
func writeGroup(w http.ResponseWriter, g identity.Group, err error) {
	if keel.KindOf(err) == keel.KindNotFound {
		writeNotFound(w)
		return
	}
	if err != nil {
		writeGroupError(w, err)
		return
	}
	orNil := func(s []string) any {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{
		"id":                g.ID,
		"name":              g.Name,
		"type":              g.Type,
		"metadata":          g.Metadata,
		"policies":          g.Policies,
		"member_group_ids":  orNil(g.MemberGroupIDs),
		"member_entity_ids": g.MemberEntityIDs,
		"parent_group_ids":  orNil(g.ParentGroupIDs),
		"alias":             map[string]any{},
		"creation_time":     rfc3339(g.CreationTime),
		"last_update_time":  rfc3339(g.LastUpdateTime),
		"modify_index":      g.ModifyIndex,
	}))
}

func (h *Handler) groupDeleteByID(w http.ResponseWriter, r *http.Request) {
	writeGroupDeleted(w, h.groups.DeleteByID(r.Context(), r.PathValue("id")))
}

func (h *Handler) groupDeleteByName(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" {
		writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{"empty group name"}})
		return
	}
	writeGroupDeleted(w, h.groups.DeleteByName(r.Context(), name))
}

// writeGroupDeleted answers 204 for a deleted or missing group, as Vault.
func writeGroupDeleted(w http.ResponseWriter, err error) {
	if err != nil && keel.KindOf(err) != keel.KindNotFound {
		writeGroupError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) groupListIDs(w http.ResponseWriter, r *http.Request) {
	if !isList(r) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
		return
	}
	keys, err := h.groups.ListIDs(r.Context())
	writeGroupKeys(w, keys, err)
}

func (h *Handler) groupListNames(w http.ResponseWriter, r *http.Request) {
	if !isList(r) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
		return
	}
	keys, err := h.groups.ListNames(r.Context())
	writeGroupKeys(w, keys, err)
}

func writeGroupKeys(w http.ResponseWriter, keys []string, err error) {
	switch {
	case err != nil:
		writeGroupError(w, err)
	case len(keys) == 0:
		writeNotFound(w)
	default:
		writeJSON(w, http.StatusOK, newResponse(map[string]any{"keys": keys}))
	}
}

// writeGroupError answers as writeError does, except that a broken rule
// answers 400 with one message per problem, "field: rule"
// ("member_group_ids: cyclic relationship detected for member group ID
// …"), without the package's context.
func writeGroupError(w http.ResponseWriter, err error) {
	fes := keel.FieldErrors(err)
	if keel.KindOf(err) != keel.KindInvalid || len(fes) == 0 {
		writeError(w, err)
		return
	}
	msgs := make([]string, len(fes))
	for i, fe := range fes {
		msgs[i] = fe.Error()
	}
	writeJSON(w, http.StatusBadRequest, errorBody{Errors: msgs})
}
