package vault_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/storage/memstore"
)

func TestIdentityGroupLifecycle(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.client(t, rootToken).Logical()

	// Lists of nothing: 404, which the client reports as nil.
	if s, err := c.List("identity/group/id"); err != nil || s != nil {
		t.Fatalf("empty list = %v, %v; want nil, nil", s, err)
	}

	// POST identity/group without name: created, 200 with id and name.
	s, err := c.Write("identity/group", map[string]any{"policies": []string{"dev", "ci", "dev"}, "metadata": map[string]string{"team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Data["id"].(string)
	name, _ := s.Data["name"].(string)
	if id == "" || !strings.HasPrefix(name, "entity-") || s.RequestID == "" {
		t.Fatalf("create = %+v", s)
	}
	// A member, by name endpoint: created.
	s, err = c.Write("identity/group/name/Child", map[string]any{"type": "internal"})
	if err != nil || s == nil || s.Data["name"] != "Child" {
		t.Fatalf("create by name = %+v, %v", s, err)
	}
	child, _ := s.Data["id"].(string)

	// Update by id: 200 with id and name, as the document states.
	s, err = c.Write("identity/group/id/"+id, map[string]any{"name": "Parent", "member_group_ids": []string{child}})
	if err != nil || s == nil || s.Data["id"] != id || s.Data["name"] != "Parent" {
		t.Fatalf("update by id = %+v, %v; want data {id, name}", s, err)
	}
	// Update through POST identity/group with id: the same.
	if s, err := c.Write("identity/group", map[string]any{"id": id, "member_entity_ids": "e1,e2"}); err != nil || s == nil || s.Data["id"] != id || s.Data["name"] != "Parent" {
		t.Fatalf("upsert by id = %+v, %v; want data {id, name}", s, err)
	}

	// Read by id.
	s, err = c.Read("identity/group/id/" + id)
	if err != nil || s == nil {
		t.Fatalf("read = %v, %v", s, err)
	}
	d := s.Data
	if d["name"] != "Parent" || d["type"] != "internal" || d["modify_index"].(interface{ String() string }).String() != "3" ||
		!slices.Equal(toStrings(d["policies"].([]any)), []string{"ci", "dev"}) ||
		!slices.Equal(toStrings(d["member_group_ids"].([]any)), []string{child}) ||
		!slices.Equal(toStrings(d["member_entity_ids"].([]any)), []string{"e1", "e2"}) ||
		d["parent_group_ids"] != nil || d["metadata"].(map[string]any)["team"] != "core" ||
		d["creation_time"] != "2026-11-22T10:00:00Z" || len(d["alias"].(map[string]any)) != 0 {
		t.Fatalf("read data = %v", d)
	}
	// Read by name, ignoring case: parents.
	s, err = c.Read("identity/group/name/child")
	if err != nil || s == nil || !slices.Equal(toStrings(s.Data["parent_group_ids"].([]any)), []string{id}) {
		t.Fatalf("read by name = %v, %v", s, err)
	}

	// Lists, LIST and GET ?list=true.
	s, err = c.List("identity/group/name")
	if err != nil || !slices.Equal(toStrings(s.Data["keys"].([]any)), []string{"Child", "Parent"}) {
		t.Fatalf("list names = %v, %v", s, err)
	}
	s, err = c.ReadWithData("identity/group/id", map[string][]string{"list": {"true"}})
	if err != nil || s == nil || len(s.Data["keys"].([]any)) != 2 {
		t.Fatalf("GET ?list=true = %v, %v", s, err)
	}

	// Delete by name: 204; the member loses its parent.
	if _, err := c.Delete("identity/group/name/parent"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("identity/group/id/" + id); err != nil || s != nil {
		t.Fatalf("read after delete = %v, %v; want nil (404)", s, err)
	}
	s, err = c.Read("identity/group/id/" + child)
	if err != nil || s.Data["parent_group_ids"] != nil {
		t.Fatalf("child after delete of its parent = %v, %v", s, err)
	}
	// Deleting a missing group: 204 as Vault.
	if _, err := c.Delete("identity/group/id/" + id); err != nil {
		t.Fatalf("delete of a missing group: %v", err)
	}
	if _, err := c.Delete("identity/group/id/" + child); err != nil {
		t.Fatal(err)
	}
}

func TestIdentityGroupErrors(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.client(t, rootToken).Logical()
	a, err := c.Write("identity/group/name/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	aID := a.Data["id"].(string)
	b, err := c.Write("identity/group/name/b", map[string]any{"member_group_ids": []string{aID}})
	if err != nil {
		t.Fatal(err)
	}
	bID := b.Data["id"].(string)

	for name, tc := range map[string]struct {
		path  string
		body  map[string]any
		field string // the wire name of the broken rule; "" for none
		want  string // part of the message
	}{
		"cycle":           {"identity/group/id/" + aID, map[string]any{"member_group_ids": []string{bID}}, "member_group_ids", "cyclic relationship"},
		"itself":          {"identity/group/id/" + aID, map[string]any{"member_group_ids": aID}, "member_group_ids", "cannot contain itself"},
		"missing member":  {"identity/group", map[string]any{"member_group_ids": []string{"nope"}}, "member_group_ids", `invalid member group ID "nope"`},
		"empty member":    {"identity/group", map[string]any{"member_group_ids": []string{aID, ""}}, "member_group_ids", "must not be empty"},
		"type change":     {"identity/group/name/a", map[string]any{"type": "external"}, "type", "group type cannot be changed"},
		"unknown type":    {"identity/group", map[string]any{"type": "team"}, "type", "invalid group type"},
		"name taken":      {"identity/group/id/" + bID, map[string]any{"name": "A"}, "name", "group name is already in use"},
		"name control":    {"identity/group/name/a\x01b", nil, "name", "control characters"},
		"root policy":     {"identity/group", map[string]any{"policies": "root"}, "policies", "policies cannot contain root"},
		"unknown id":      {"identity/group/id/nope", map[string]any{"policies": "x"}, "", "invalid group ID"},
		"unknown id body": {"identity/group", map[string]any{"id": "nope"}, "", "invalid group ID"},
		"external member": {"identity/group", map[string]any{"type": "external", "member_entity_ids": []string{"e"}}, "member_entity_ids", "external groups"},
		"metadata":        {"identity/group", map[string]any{"metadata": map[string]string{strings.Repeat("k", 129): "v"}}, "metadata", "longer than 128"},
		"bad body":        {"identity/group", map[string]any{"member_group_ids": true}, "", "failed to parse JSON input: member_group_ids: must be"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Write(tc.path, tc.body)
			if tc.field != "" {
				wantField(t, err, tc.field, tc.want)
				return
			}
			var re *api.ResponseError
			if statusOf(err) != http.StatusBadRequest || !errors.As(err, &re) || len(re.Errors) == 0 || !strings.Contains(strings.Join(re.Errors, "|"), tc.want) {
				t.Fatalf("error %v, want 400 with %q", err, tc.want)
			}
		})
	}
	// Every problem is answered at once, one message each.
	_, err = c.Write("identity/group", map[string]any{"type": "team", "policies": "root", "metadata": map[string]string{"": "v"}})
	var re *api.ResponseError
	if !errors.As(err, &re) || len(re.Errors) != 3 {
		t.Fatalf("three problems: %v, want three messages", err)
	}
	for _, f := range []string{"type", "policies", "metadata"} {
		wantField(t, err, f, "")
	}
}

func TestIdentityGroupReaderCannotChangeMembership(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	root := e.client(t, rootToken).Logical()
	reader := e.client(t, readerToken).Logical()
	admins, err := root.Write("identity/group/name/admins", map[string]any{"policies": "admin"})
	if err != nil {
		t.Fatal(err)
	}
	id := admins.Data["id"].(string)
	for name, write := range map[string]func() error{
		"by id": func() error {
			_, err := reader.Write("identity/group/id/"+id, map[string]any{"member_entity_ids": "me"})
			return err
		},
		"by name": func() error {
			_, err := reader.Write("identity/group/name/admins", map[string]any{"member_entity_ids": "me"})
			return err
		},
		"upsert": func() error {
			_, err := reader.Write("identity/group", map[string]any{"id": id, "member_entity_ids": "me"})
			return err
		},
		"create":      func() error { _, err := reader.Write("identity/group", map[string]any{"name": "mine"}); return err },
		"delete":      func() error { _, err := reader.Delete("identity/group/id/" + id); return err },
		"unknown tok": func() error { _, err := e.client(t, "nobody").Logical().Read("identity/group/id/" + id); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := write(); statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "permission denied") {
				t.Fatalf("error %v, want 403 permission denied", err)
			}
		})
	}
	s, err := reader.Read("identity/group/id/" + id)
	if err != nil || s == nil || len(s.Data["member_entity_ids"].([]any)) != 0 {
		t.Fatalf("reader's read = %v, %v", s, err)
	}
	if s, err := reader.List("identity/group/id"); err != nil || len(s.Data["keys"].([]any)) != 1 {
		t.Fatalf("reader's list = %v, %v", s, err)
	}
}

// TestIdentityGroupListsAnswerEveryKey: LIST identity/group/id and
// identity/group/name answer every group at once, as Vault's, though the
// library gives its lists in pages: more groups than a page holds are all
// listed, in the library's order, with key_info for each id.
func TestIdentityGroupListsAnswerEveryKey(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	n := 1000 + 2
	var ids, names []string
	for i := range n {
		name := fmt.Sprintf("g%05d", i)
		if i%2 == 1 {
			name = strings.ToUpper(name) // "G00001" lists after "g00000": names list by their folded form
		}
		res, err := e.table.Groups().CreateOrUpdateByName(ctx, name, identity.GroupRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids, names = append(ids, res.ID), append(names, name)
	}
	slices.Sort(ids)
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	c := e.client(t, rootToken).Logical()
	for path, want := range map[string][]string{"identity/group/id": ids, "identity/group/name": names} {
		s, err := c.List(path)
		if err != nil || s == nil {
			t.Fatalf("LIST %s = %v, %v", path, s, err)
		}
		keys, _ := s.Data["keys"].([]any)
		if got := toStrings(keys); !slices.Equal(got, want) {
			t.Fatalf("LIST %s: %d keys, want the %d groups in order", path, len(got), len(want))
		}
		if path == "identity/group/id" {
			if info, _ := s.Data["key_info"].(map[string]any); len(info) != n {
				t.Fatalf("LIST %s: key_info of %d ids, want %d", path, len(info), n)
			}
		}
	}
}
