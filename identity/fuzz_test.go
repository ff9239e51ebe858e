package identity

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

// FuzzGroupRequest: validation of names and metadata never panics; a refused
// write changes nothing, and an accepted one reads back as written, its
// name found again ignoring case.
func FuzzGroupRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"admins", "team", "core"}, {"", "", ""}, {"a\nb", "k", "v"}, {"\xff", "\xff", "v"},
		{"ÄÖÜ", strings.Repeat("k", 129), "v"}, {"x", "k", strings.Repeat("é", 513)}, {"K", "", "v"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, name, key, value string) {
		e := newEnv(t, everystore.Mem, nil, nil)
		ctx := context.Background()
		res, err := e.g.CreateOrUpdate(ctx, "", GroupRequest{Name: &name, Metadata: &map[string]string{key: value}})
		valid := (name == "" || nameRule(name) == "") && key != "" && utf8.ValidString(key) && utf8.ValidString(value) &&
			utf8.RuneCountInString(key) <= maxMetadataKeyLen && utf8.RuneCountInString(value) <= maxMetadataValueLen
		if !valid {
			wantKind(t, err, keel.KindInvalid)
			if len(storagetest.Dump(t, e.raw)) != 0 {
				t.Fatal("a refused write stored something")
			}
			return
		}
		if err != nil {
			if keel.KindOf(err) == keel.KindTooLarge {
				return
			}
			t.Fatalf("CreateOrUpdate(%q, %q=%q): %v", name, key, value, err)
		}
		g, err := e.g.GetByName(ctx, strings.ToUpper(res.Name))
		if err != nil {
			g, err = e.g.GetByName(ctx, res.Name)
		}
		if err != nil || g.ID != res.ID || g.Metadata[key] != value || (name != "" && g.Name != name) {
			t.Fatalf("read back %+v, %v; wrote %q %q=%q", g, err, name, key, value)
		}
	})
}
