package identity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestCreateReadDefaults(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Created || !strings.HasPrefix(res.Name, "entity-") || len(res.Name) != len("entity-")+36 || len(res.ID) != 36 {
			t.Fatalf("CreateOrUpdate = %+v, want a created group named entity-<UUID>", res)
		}
		g := e.read(t, res.ID)
		want := Group{
			ID: res.ID, Name: res.Name, Type: Internal,
			Metadata: map[string]string{}, Policies: []string{}, MemberGroupIDs: []string{},
			MemberEntityIDs: []string{}, ParentGroupIDs: []string{},
			CreationTime: t0, LastUpdateTime: t0, ModifyIndex: 1,
		}
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("read = %+v\nwant   %+v", g, want)
		}
		byName, err := e.g.GetByName(ctx, strings.ToUpper(res.Name))
		if err != nil || byName.ID != res.ID {
			t.Fatalf("GetByName(upper case) = %+v, %v", byName, err)
		}
	})
}

func TestCreateOrUpdateRouting(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		a := e.create(t, "Alpha")

		e.clock.Advance(time.Minute)
		// by name, ignoring case: updates Alpha.
		res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Name: new("alpha"), Policies: &[]string{"p"}})
		if err != nil || res.Created || res.ID != a || res.Name != "alpha" {
			t.Fatalf("CreateOrUpdate by name = %+v, %v; want an update of %s, renamed to alpha", res, err, a)
		}
		// by id: renames.
		res, err = e.g.CreateOrUpdate(ctx, a, GroupRequest{Name: new("Beta")})
		if err != nil || res.Created || res.Name != "Beta" {
			t.Fatalf("CreateOrUpdate by id = %+v, %v", res, err)
		}
		g := e.read(t, a)
		if g.Name != "Beta" || !slices.Equal(g.Policies, []string{"p"}) || g.ModifyIndex != 3 ||
			!g.CreationTime.Equal(t0) || !g.LastUpdateTime.Equal(t0.Add(time.Minute)) {
			t.Fatalf("after updates: %+v", g)
		}
		if _, err := e.g.GetByName(ctx, "alpha"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("old name still readable: %v", err)
		}
		names, err := collect(ctx, 0, e.g.ListNames)
		if err != nil || !slices.Equal(names, []string{"Beta"}) {
			t.Fatalf("ListNames = %q, %v", names, err)
		}
		// by id, missing.
		_, err = e.g.CreateOrUpdate(ctx, "4b1d8c52-0000-0000-0000-000000000000", GroupRequest{})
		wantKind(t, err, keel.KindNotFound)
		_, err = e.g.Update(ctx, "nope", GroupRequest{})
		wantKind(t, err, keel.KindNotFound)
		// by name path: creates, then updates with the path's case.
		res, err = e.g.CreateOrUpdateByName(ctx, "gamma", GroupRequest{Name: new("ignored")})
		if err != nil || !res.Created || res.Name != "gamma" {
			t.Fatalf("CreateOrUpdateByName create = %+v, %v", res, err)
		}
		res2, err := e.g.CreateOrUpdateByName(ctx, "GAMMA", GroupRequest{})
		if err != nil || res2.Created || res2.ID != res.ID || res2.Name != "GAMMA" {
			t.Fatalf("CreateOrUpdateByName update = %+v, %v", res2, err)
		}
	})
}

func TestFieldsAbsentAreKept(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		m := e.create(t, "member")
		res, err := e.g.CreateOrUpdateByName(ctx, "g", GroupRequest{
			Metadata: &map[string]string{"k": "v"}, Policies: &[]string{"a"},
			MemberGroupIDs: &[]string{m}, MemberEntityIDs: &[]string{"e1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.g.Update(ctx, res.ID, GroupRequest{Policies: &[]string{"b"}}); err != nil {
			t.Fatal(err)
		}
		g := e.read(t, res.ID)
		if g.Metadata["k"] != "v" || !slices.Equal(g.Policies, []string{"b"}) ||
			!slices.Equal(g.MemberGroupIDs, []string{m}) || !slices.Equal(g.MemberEntityIDs, []string{"e1"}) {
			t.Fatalf("absent fields not kept: %+v", g)
		}
		// Empty lists clear.
		if _, err := e.g.Update(ctx, res.ID, GroupRequest{MemberGroupIDs: &[]string{}, Metadata: &map[string]string{}}); err != nil {
			t.Fatal(err)
		}
		g = e.read(t, res.ID)
		if len(g.MemberGroupIDs) != 0 || len(g.Metadata) != 0 || len(e.read(t, m).ParentGroupIDs) != 0 {
			t.Fatalf("empty lists did not clear: %+v", g)
		}
		checkGraph(t, e.raw)
	})
}

func TestRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		long := func(n int) string { return strings.Repeat("é", n) }
		tooMany := map[string]string{}
		for i := range maxMetadataPairs + 1 {
			tooMany[fmt.Sprint("k", i)] = "v"
		}
		for name, tc := range map[string]struct {
			setup func(t testing.TB, e *env) (id string) // the group updated, or "" to create
			in    func(e *env, id string) GroupRequest   // the request
			field string                                 // the field of the problem
			rule  string                                 // part of its rule
		}{
			"type cannot change": {
				setup: func(t testing.TB, e *env) string { return e.create(t, "g") },
				in:    func(*env, string) GroupRequest { return GroupRequest{Type: new(External)} },
				field: "Type", rule: "cannot be changed",
			},
			"unknown type": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Type: new("team")} },
				field: "Type", rule: `invalid group type "team"`,
			},
			"name taken ignoring case": {
				setup: func(t testing.TB, e *env) string { e.create(t, "Admins"); return e.create(t, "other") },
				in:    func(*env, string) GroupRequest { return GroupRequest{Name: new("ADMINS")} },
				field: "Name", rule: "already in use",
			},
			"name with a control character": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Name: new("a\nb")} },
				field: "Name", rule: "control characters",
			},
			"name not UTF-8": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Name: new("a\xffb")} },
				field: "Name", rule: "UTF-8",
			},
			"external group takes no member groups": {
				setup: func(t testing.TB, e *env) string { e.create(t, "m"); return "" },
				in: func(e *env, _ string) GroupRequest {
					m, _ := e.g.GetByName(context.Background(), "m")
					return GroupRequest{Type: new(External), MemberGroupIDs: &[]string{m.ID}}
				},
				field: "MemberGroupIDs", rule: "external",
			},
			"external group takes no member entities": {
				setup: func(t testing.TB, e *env) string {
					res, err := e.g.CreateOrUpdateByName(context.Background(), "ext", GroupRequest{Type: new(External)})
					if err != nil {
						t.Fatal(err)
					}
					return res.ID
				},
				in:    func(*env, string) GroupRequest { return GroupRequest{MemberEntityIDs: &[]string{"e1"}} },
				field: "MemberEntityIDs", rule: "external",
			},
			"group cannot contain itself": {
				setup: func(t testing.TB, e *env) string { return e.create(t, "g") },
				in:    func(_ *env, id string) GroupRequest { return GroupRequest{MemberGroupIDs: &[]string{id}} },
				field: "MemberGroupIDs", rule: "cannot contain itself",
			},
			"member group must exist": {
				in:    func(*env, string) GroupRequest { return GroupRequest{MemberGroupIDs: &[]string{"no-such-group"}} },
				field: "MemberGroupIDs", rule: `"no-such-group"`,
			},
			"empty member id": {
				in:    func(*env, string) GroupRequest { return GroupRequest{MemberGroupIDs: &[]string{"b", "a", ""}} },
				field: "MemberGroupIDs[2]", rule: "must not be empty",
			},
			"direct cycle": {
				setup: func(t testing.TB, e *env) string {
					a := e.create(t, "a")
					e.create(t, "b", a) // b contains a
					return a
				},
				in: func(e *env, _ string) GroupRequest {
					b, _ := e.g.GetByName(context.Background(), "b")
					return GroupRequest{MemberGroupIDs: &[]string{b.ID}}
				},
				field: "MemberGroupIDs", rule: "cyclic relationship",
			},
			"cycle three deep": {
				setup: func(t testing.TB, e *env) string {
					a := e.create(t, "a")
					b := e.create(t, "b", a)
					e.create(t, "c", b) // c > b > a
					return a
				},
				in: func(e *env, _ string) GroupRequest {
					c, _ := e.g.GetByName(context.Background(), "c")
					return GroupRequest{MemberGroupIDs: &[]string{c.ID}}
				},
				field: "MemberGroupIDs", rule: "cyclic relationship",
			},
			"root policy": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Policies: &[]string{"dev", " Root "}} },
				field: "Policies", rule: "cannot contain root",
			},
			"too many metadata pairs": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Metadata: &tooMany} },
				field: "Metadata", rule: "at most 64 pairs",
			},
			"metadata key too long": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Metadata: &map[string]string{long(129): "v"}} },
				field: "Metadata", rule: "longer than 128",
			},
			"metadata value too long": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Metadata: &map[string]string{"k": long(513)}} },
				field: "Metadata", rule: "longer than 512",
			},
			"metadata empty key": {
				in:    func(*env, string) GroupRequest { return GroupRequest{Metadata: &map[string]string{"": "v"}} },
				field: "Metadata", rule: "must not be empty",
			},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				ctx := context.Background()
				id := ""
				if tc.setup != nil {
					id = tc.setup(t, e)
				}
				in := tc.in(e, id)
				before := storagetest.Dump(t, e.raw)
				var err error
				if id == "" {
					_, err = e.g.CreateOrUpdate(ctx, "", in)
				} else {
					_, err = e.g.Update(ctx, id, in)
				}
				wantInvalid(t, err, tc.field, tc.rule)
				if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
					t.Fatalf("a refused write changed the store")
				}
			})
		}
	})
}

func TestRulesAtTheirLimits(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		md := map[string]string{strings.Repeat("é", maxMetadataKeyLen): strings.Repeat("ü", maxMetadataValueLen)}
		for i := range maxMetadataPairs - 1 {
			md[fmt.Sprint("k", i)] = ""
		}
		res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Metadata: &md, Policies: &[]string{"b", "A", " a", "", "b"}, MemberEntityIDs: &[]string{"e2", "e1", "e2"}})
		if err != nil {
			t.Fatal(err)
		}
		g := e.read(t, res.ID)
		if len(g.Metadata) != maxMetadataPairs || !slices.Equal(g.Policies, []string{"a", "b"}) || !slices.Equal(g.MemberEntityIDs, []string{"e1", "e2"}) {
			t.Fatalf("read = %+v", g)
		}
		// An external group accepts an empty member list, and its own type.
		ext, err := e.g.CreateOrUpdateByName(ctx, "ext", GroupRequest{Type: new(External), MemberGroupIDs: &[]string{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.g.Update(ctx, ext.ID, GroupRequest{Type: new(External)}); err != nil {
			t.Fatal(err)
		}
		// Every problem is reported at once.
		_, err = e.g.CreateOrUpdate(ctx, "", GroupRequest{Type: new("x"), Policies: &[]string{"root"}, MemberGroupIDs: &[]string{"missing"}})
		if fes := keel.FieldErrors(err); len(fes) != 3 {
			t.Fatalf("problems = %v, want 3", fes)
		}
	})
}

func TestParentsFollowMembers(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		a, b := e.create(t, "a"), e.create(t, "b")
		p := e.create(t, "p", a, b)
		q := e.create(t, "q", a)
		top := e.create(t, "top", p)
		if got := e.read(t, a).ParentGroupIDs; !slices.Equal(got, sorted(p, q)) {
			t.Fatalf("parents of a = %q", got)
		}
		// Remove a from p.
		if _, err := e.g.Update(ctx, p, GroupRequest{MemberGroupIDs: &[]string{b}}); err != nil {
			t.Fatal(err)
		}
		if got := e.read(t, a).ParentGroupIDs; !slices.Equal(got, []string{q}) {
			t.Fatalf("parents of a after removal = %q", got)
		}
		// Delete p: b loses its parent, top loses its member, and top's
		// index grows.
		before := e.read(t, top).ModifyIndex
		e.clock.Advance(time.Hour)
		if err := e.g.DeleteByName(ctx, "P"); err != nil {
			t.Fatal(err)
		}
		if got := e.read(t, b).ParentGroupIDs; len(got) != 0 {
			t.Fatalf("parents of b after delete of p = %q", got)
		}
		tg := e.read(t, top)
		if len(tg.MemberGroupIDs) != 0 || tg.ModifyIndex != before+1 || !tg.LastUpdateTime.Equal(t0.Add(time.Hour)) {
			t.Fatalf("top after delete of its member: %+v", tg)
		}
		if _, err := e.g.Get(ctx, p); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("read of deleted group: %v", err)
		}
		if err := e.g.Delete(ctx, p); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		checkGraph(t, e.raw)
		// The name is free again, ignoring case.
		e.create(t, "P")
	})
}

func TestListSorted(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		ids, err := collect(ctx, 0, e.g.List)
		if err != nil || len(ids) != 0 {
			t.Fatalf("empty List = %q, %v", ids, err)
		}
		var want []string
		for _, n := range []string{"b", "C", "a", "Ä"} {
			want = append(want, e.create(t, n))
		}
		slices.Sort(want)
		ids, err = collect(ctx, 0, e.g.List)
		if err != nil || !slices.Equal(ids, want) {
			t.Fatalf("List = %q, %v; want %q", ids, err, want)
		}
		names, err := collect(ctx, 0, e.g.ListNames)
		if err != nil || !slices.Equal(names, []string{"a", "b", "C", "Ä"}) {
			t.Fatalf("ListNames = %q, %v", names, err)
		}
	})
}

type fakeDirectory map[string]bool

func (d fakeDirectory) Exists(_ context.Context, id string) (bool, error) {
	if id == "broken" {
		return false, errors.New("directory down")
	}
	return d[id], nil
}

func TestEntityDirectory(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, &Options{Entities: fakeDirectory{"e1": true}}, nil)
		ctx := context.Background()
		if _, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{MemberEntityIDs: &[]string{"e1"}}); err != nil {
			t.Fatal(err)
		}
		_, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{MemberEntityIDs: &[]string{"e1", "e9"}})
		wantInvalid(t, err, "MemberEntityIDs", `"e9"`)
		_, err = e.g.CreateOrUpdate(ctx, "", GroupRequest{MemberEntityIDs: &[]string{"broken"}})
		wantKind(t, err, keel.KindUnavailable)
	})
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
