package kv

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// FuzzPath: path validation never panics; a refused path writes nothing
// and is refused by every operation; an accepted path round-trips through
// Write, Read, List and Delete.
func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"a", "a/b", "app/db/password", "a/", "/a", "a//b", ".", "..", "a..b",
		"a/./b", ".hidden/x", "ü/ß", "", "\xff", "a-x", "a\x00b", "a/b/c/d/e/f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ctx := context.Background()
		store := memstore.New(nil)
		defer store.Close()
		e, err := New(store, "secret", nil)
		if err != nil {
			t.Fatal(err)
		}
		werr := e.Write(ctx, p, map[string]any{"path": p})
		if pathRule(p) != "" {
			if keel.KindOf(werr) != keel.KindInvalid {
				t.Fatalf("Write(%q) = %v, want invalid", p, werr)
			}
			want := keel.KindInvalid
			if folder, ok := strings.CutSuffix(p, "/"); p == "" || ok && pathRule(folder) == "" {
				want = keel.KindNotFound // a folder, which holds no value
			}
			if _, err := e.Read(ctx, p); keel.KindOf(err) != want {
				t.Fatalf("Read(%q) = %v, want %v", p, err, want)
			}
			if err := e.Delete(ctx, p); keel.KindOf(err) != keel.KindInvalid {
				t.Fatalf("Delete(%q) = %v, want invalid", p, err)
			}
			if n := countKeys(t, store); n != 0 {
				t.Fatalf("refused path %q left %d keys", p, n)
			}
			return
		}
		if keel.KindOf(werr) == keel.KindTooLarge {
			return // longer than the store's keys
		}
		if werr != nil {
			t.Fatalf("Write(%q): %v", p, werr)
		}
		s, err := e.Read(ctx, p)
		if err != nil {
			t.Fatalf("Read(%q): %v", p, err)
		}
		if got, _ := s.Data["path"].(string); got != p || len(s.Data) != 1 {
			t.Fatalf("Read(%q) = %v", p, s.Data)
		}
		parent, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		page, err := e.List(ctx, parent, keel.ListRequest{})
		if err != nil || !slices.Equal(page.Items, []string{name}) || page.Next != "" {
			t.Fatalf("List(%q) = %+v, %v; want [%q]", parent, page, err, name)
		}
		if _, err := e.List(ctx, p, keel.ListRequest{}); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("List(%q) of a leaf = %v, want not found", p, err)
		}
		if err := e.Delete(ctx, p); err != nil {
			t.Fatalf("Delete(%q): %v", p, err)
		}
		if _, err := e.Read(ctx, p); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("Read(%q) after Delete = %v, want not found", p, err)
		}
	})
}

// FuzzTTL: a Write stores any ttl string (as Vault), and a Read reports
// it when keel.ParseDuration reads it, else the mount default.
func FuzzTTL(f *testing.F) {
	for _, s := range []string{
		"", "0", "60", "-1", "+5", "1h", "90m", "30s", "7d", "1.5", "1.5h",
		"1e3", "-5m", "106751d", "106752d", "9223372036854775807", "1h30m",
		"d", "h", " 1", "1d2h", "10µs", "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encoding/json would store another string
		}
		want, perr := keel.ParseDuration("Data", s)
		ctx := context.Background()
		store := memstore.New(nil)
		defer store.Close()
		e, err := New(store, "secret", nil)
		if err != nil {
			t.Fatal(err)
		}
		// Any ttl is stored (as Vault); one that does not parse reads as
		// the mount default.
		if err := e.Write(ctx, "p", map[string]any{"ttl": s}); err != nil {
			t.Fatalf("Write ttl %q: %v", s, err)
		}
		if perr != nil {
			want = defaultLeaseDuration
		}
		got, err := e.Read(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		if got.LeaseDuration != want {
			t.Fatalf("ttl %q read as %v, want %v", s, got.LeaseDuration, want)
		}
	})
}

func countKeys(t *testing.T, store storage.Store) int {
	t.Helper()
	n := 0
	err := store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
