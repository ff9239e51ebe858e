package storage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// outside are keys of the parent store around the prefix "p/" of the views
// under test; no view may see or change them. "p/" itself is one: a view
// has no empty key.
var outside = map[string]string{
	"a":    "1",
	"o/p":  "2",
	"p":    "3",
	"p/":   "4",
	"p.":   "5",
	"p0":   "6",
	"pa":   "7",
	"q/x":  "8",
	"\xff": "9",
}

// newParent returns a memory store holding the outside keys.
func newParent(t testing.TB) *memstore.Store {
	t.Helper()
	m := memstore.New(nil)
	err := m.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for k, v := range outside {
			if err := tx.Put(k, []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkParent fails t unless m holds the outside keys unchanged, and the
// keys of want under their full names.
func checkParent(t testing.TB, m storage.Store, want map[string]string) {
	t.Helper()
	all := map[string]string{}
	for k, v := range outside {
		all[k] = v
	}
	for k, v := range want {
		all[k] = v
	}
	got := map[string]string{}
	err := m.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{}, func(key string, value []byte) error {
			got[key] = string(value)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range all {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("parent: %q = %q (present: %v), want %q", k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := all[k]; !ok {
			t.Errorf("parent: unexpected key %q = %q", k, v)
		}
	}
}

// closingView is a view whose Close closes its parent too, as the suite
// expects of a store: Sub's own Close does nothing.
type closingView struct {
	storage.Store
	parent storage.Store
}

func (v closingView) Close() error {
	return errors.Join(v.Store.Close(), v.parent.Close())
}

func TestSubConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		m := newParent(t)
		return closingView{storage.Sub(m, "p/"), m}
	})
}

func TestSubNestedConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		m := newParent(t)
		return closingView{storage.Sub(storage.Sub(m, "p/"), "n/"), m}
	})
}

func TestSubConfinement(t *testing.T) {
	ctx := context.Background()
	m := newParent(t)
	t.Cleanup(func() { m.Close() })
	sub := storage.Sub(m, "p/")

	// A view starts empty: it sees none of the outside keys, not even
	// "p/", its prefix.
	scan := func(s storage.Store, prefix string, opts storage.ScanOptions) []string {
		t.Helper()
		var keys []string
		err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.Scan(prefix, opts, func(key string, value []byte) error {
				keys = append(keys, key)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if got := scan(sub, "", storage.ScanOptions{}); len(got) != 0 {
		t.Errorf("a view of %q over a store without keys under it scans %q, want nothing", "p/", got)
	}

	// Writes through the view land under the prefix, and only there;
	// names of outside keys, given to the view, are keys of the view.
	err := sub.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for k := range outside {
			if _, err := tx.Get(k); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("view Get(%q) = %v, want not found: the view sees an outside key", k, err)
			}
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		for _, k := range []string{"x", "a", "o/p"} {
			if err := tx.Put(k, []byte("in:"+k)); err != nil {
				return err
			}
		}
		_, err := tx.Get("")
		if !errors.Is(err, storage.ErrEmptyKey) || keel.KindOf(err) != keel.KindInvalid {
			t.Errorf(`view Get("") = %v, want ErrEmptyKey, not the parent's key "p/"`, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkParent(t, m, map[string]string{"p/x": "in:x", "p/a": "in:a", "p/o/p": "in:o/p"})
	if got, want := scan(sub, "", storage.ScanOptions{}), []string{"a", "o/p", "x"}; !slices.Equal(got, want) {
		t.Errorf("view Scan = %q, want %q", got, want)
	}
	if got, want := scan(sub, "", storage.ScanOptions{After: "a"}), []string{"o/p", "x"}; !slices.Equal(got, want) {
		t.Errorf("view Scan after %q = %q, want %q", "a", got, want)
	}
	if got, want := scan(sub, "o", storage.ScanOptions{}), []string{"o/p"}; !slices.Equal(got, want) {
		t.Errorf("view Scan of prefix %q = %q, want %q", "o", got, want)
	}

	// The view's key limit leaves room for the prefix.
	if got, want := sub.Limits().MaxKeySize, m.Limits().MaxKeySize-len("p/"); got != want {
		t.Errorf("view MaxKeySize = %d, want %d", got, want)
	}

	// Nested views compose their prefixes.
	nested := storage.Sub(sub, "n/")
	if err := nested.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("k", []byte("nested"))
	}); err != nil {
		t.Fatal(err)
	}
	checkParent(t, m, map[string]string{"p/x": "in:x", "p/a": "in:a", "p/o/p": "in:o/p", "p/n/k": "nested"})
	if got, want := scan(sub, "n/", storage.ScanOptions{}), []string{"n/k"}; !slices.Equal(got, want) {
		t.Errorf("view Scan of the nested view's keys = %q, want %q", got, want)
	}
	if got, want := scan(nested, "", storage.ScanOptions{}), []string{"k"}; !slices.Equal(got, want) {
		t.Errorf("nested view Scan = %q, want %q", got, want)
	}
	if got, want := nested.Limits().MaxKeySize, m.Limits().MaxKeySize-len("p/n/"); got != want {
		t.Errorf("nested view MaxKeySize = %d, want %d", got, want)
	}
	if got, want := scan(storage.Sub(m, "p/n/"), "", storage.ScanOptions{}), []string{"k"}; !slices.Equal(got, want) {
		t.Errorf("Sub(m, %q) Scan = %q, want %q, the nested view's keys", "p/n/", got, want)
	}

	// Closing a view leaves the store open.
	if err := sub.Close(); err != nil {
		t.Errorf("view Close = %v", err)
	}
	checkParent(t, m, map[string]string{"p/x": "in:x", "p/a": "in:a", "p/o/p": "in:o/p", "p/n/k": "nested"})
}

func TestSubTxJoinsTheCallersTransaction(t *testing.T) {
	m := memstore.New(nil)
	errRollback := errors.New("roll back")
	err := m.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("engine/x", []byte("1")); err != nil {
			return err
		}
		if err := storage.SubTx(storage.SubTx(tx, "lease/"), "id/").Put("a", []byte("2")); err != nil {
			return err
		}
		v, err := tx.Get("lease/id/a")
		if err != nil || string(v) != "2" {
			t.Errorf("write through SubTx not visible in the parent: %q, %v", v, err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	m.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.Get("lease/id/a"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("write through SubTx survived the rollback of the parent: %v", err)
		}
		return nil
	})
}
