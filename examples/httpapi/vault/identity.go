package vault

import (
	"context"
	"maps"
	"math"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
)

// groupRoutes are the identity group endpoints (see the package
// documentation).
func (h *Handler) groupRoutes() []route {
	const p = "/v1/identity/group"
	g := h.groups
	listIDs := h.groupListByID()
	// Vault's LIST answers every name at once: one page of them all.
	listNames := listing(mountIdentity, "", func(ctx context.Context) ([]string, error) {
		return everyKey(ctx, math.MaxInt, g.ListNames)
	})
	return []route{
		{"POST PUT", p, groupWrite("", g.CreateOrUpdate)},
		{"POST PUT", p + "/id/{id}", groupWrite("id", g.Update)},
		{"POST PUT", p + "/name/{name...}", named(groupWrite("name", g.CreateOrUpdateByName))},
		{"GET", p + "/id/{id}", groupRead("id", g.Get)},
		{"GET", p + "/name/{name...}", groupRead("name", g.GetByName)},
		{"DELETE", p + "/id/{id}", groupDelete("id", g.Delete)},
		{"DELETE", p + "/name/{name...}", named(groupDelete("name", g.DeleteByName))},
		{"LIST GET", p + "/id", listIDs},
		{"LIST GET", p + "/id/{$}", listIDs},
		{"LIST GET", p + "/name", listNames},
		{"LIST GET", p + "/name/{$}", listNames},
	}
}

// groupInfo is a group's entry in key_info of LIST identity/group/id:
// Vault's members.
type groupInfo struct {
	Name              string `json:"name"`
	NumMemberEntities int    `json:"num_member_entities"`
	NumParentGroups   int    `json:"num_parent_groups"`
}

// groupListByID answers LIST identity/group/id as Vault's: keys, the
// groups' ids, and key_info, each id's name and numbers of member entities
// and parent groups. A group the caller may not read, or deleted since it
// was listed, has no entry in key_info. (Vault's LIST by name answers no
// key_info: its entries are keyed by id, and it keeps only those of the
// keys listed.)
func (h *Handler) groupListByID() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isList(r) {
			methodNotAllowed(w, "")
			return
		}
		ctx := r.Context()
		ids, err := everyKey(ctx, 0, h.groups.List)
		if err == nil && len(ids) == 0 {
			err = errMissing
		}
		if err != nil {
			writeError(w, err)
			return
		}
		info := make(map[string]groupInfo, len(ids))
		for _, id := range ids {
			g, err := h.groups.Get(ctx, id)
			switch keel.KindOf(err) {
			case keel.KindNone:
				info[id] = groupInfo{Name: g.Name, NumMemberEntities: len(g.MemberEntityIDs), NumParentGroups: len(g.ParentGroupIDs)}
			case keel.KindNotFound, keel.KindForbidden:
			default:
				writeError(w, err)
				return
			}
		}
		data := map[string]any{"keys": ids}
		if len(info) > 0 {
			data["key_info"] = info
		}
		writeJSON(w, http.StatusOK, newResponse(mountIdentity, data))
	}
}

// everyKey returns every item of a paged list of the groups, walked with
// keel.All in pages of limit items (0: the list's default): Vault's LIST
// answers every key at once.
func everyKey(ctx context.Context, limit int, list func(context.Context, keel.ListRequest) (keel.Page[string], error)) ([]string, error) {
	var keys []string
	for k, err := range keel.All(ctx, limit, list) {
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// named is serve, except for an empty :name: 400 "empty group name".
func named(serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") == "" {
			writeMessage(w, http.StatusBadRequest, "empty group name")
			return
		}
		serve(w, r)
	}
}

// groupFrom reads a group write: a member absent or null is left as it
// is; one of the wrong type makes the body unreadable ("failed to parse
// JSON input: …").
func groupFrom(f *fields) identity.GroupRequest {
	maps.DeleteFunc(f.m, func(_ string, v any) bool { return v == nil })
	in := identity.GroupRequest{
		Name: opt(f, "name", f.str), Type: opt(f, "type", f.str), Metadata: opt(f, "metadata", f.pairs),
		Policies: opt(f, "policies", f.strList), MemberGroupIDs: opt(f, "member_group_ids", f.strList),
		MemberEntityIDs: opt(f, "member_entity_ids", f.strList),
	}
	problems := keel.FieldErrors(f.v.Err())
	f.v = keel.Validation{}
	for _, fe := range problems {
		f.v.Add("", "failed to parse JSON input: %s", fe)
	}
	return in
}

// groupWrite is the handler of a group write done by write, given the path
// value from, or for "" the body's id. Every write answers 200 with the
// group's id and name, whether it created the group or updated it; a
// write by id to an unknown group answers 400 "invalid group ID".
func groupWrite(from string, write func(context.Context, string, identity.GroupRequest) (identity.Result, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue(from)
		in, err := readBody(w, r, func(f *fields) identity.GroupRequest {
			if from == "" {
				key = f.str("id")
			}
			return groupFrom(f)
		})
		var res identity.Result
		if err == nil {
			res, err = write(r.Context(), key, in)
		}
		if from != "name" && keel.KindOf(err) == keel.KindNotFound {
			err = &vaultError{http.StatusBadRequest, []string{"invalid group ID"}}
		}
		writeData(w, err, newResponse(mountIdentity, map[string]any{"id": res.ID, "name": res.Name}))
	}
}

// groupRead is the handler of a group read by read, given the path value
// from. member_group_ids and parent_group_ids are null when empty, as
// Vault's; alias is an empty object.
func groupRead(from string, read func(context.Context, string) (identity.Group, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if isList(r) {
			methodNotAllowed(w, "")
			return
		}
		g, err := read(r.Context(), r.PathValue(from))
		orNil := func(s []string) any {
			if len(s) == 0 {
				return nil
			}
			return s
		}
		writeRead(w, mountIdentity, err, map[string]any{
			"id": g.ID, "name": g.Name, "type": g.Type, "metadata": g.Metadata, "policies": g.Policies,
			"member_group_ids": orNil(g.MemberGroupIDs), "member_entity_ids": g.MemberEntityIDs,
			"parent_group_ids": orNil(g.ParentGroupIDs), "alias": map[string]any{},
			"creation_time": rfc3339(g.CreationTime), "last_update_time": rfc3339(g.LastUpdateTime),
			"modify_index": g.ModifyIndex,
		})
	}
}

// groupDelete is the handler of a group delete by del, given the path
// value from: 204 for a deleted or missing group, as Vault.
func groupDelete(from string, del func(context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := del(r.Context(), r.PathValue(from)); keel.KindOf(err) != keel.KindNotFound {
			writeDone(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
