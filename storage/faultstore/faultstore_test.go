package faultstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

var errBoom = errors.New("boom")

func write(s storage.Store, kv ...string) error {
	return s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for i := 0; i < len(kv); i += 2 {
			if err := tx.Put(kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
}

func keys(t *testing.T, s storage.Store) []string {
	t.Helper()
	var out []string
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			out = append(out, k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFailPutRollsBackTheUpdate(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	fs.Fail(faultstore.OpPut, "lease/", 1, errBoom)

	if err := write(fs, "kv/a", "1", "lease/x", "2"); !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the injected fault", err)
	}
	if got := keys(t, fs); len(got) != 0 {
		t.Fatalf("store holds %v after a failed Update, want nothing", got)
	}
	// The fault was for one operation only.
	if err := write(fs, "kv/a", "1", "lease/x", "2"); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, fs); len(got) != 2 {
		t.Fatalf("keys = %v, want 2", got)
	}
}

func TestFailOnlyMatchesItsPrefixAndOp(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	fs.Fail(faultstore.OpDelete, "lease/", 0, errBoom)
	if err := write(fs, "lease/x", "1", "kv/y", "2"); err != nil {
		t.Fatalf("a Delete fault failed a Put: %v", err)
	}
	del := func(key string) error {
		return fs.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.Delete(key) })
	}
	if err := del("kv/y"); err != nil {
		t.Fatalf("delete outside the prefix: %v", err)
	}
	for range 3 { // n <= 0: every time
		if err := del("lease/x"); !errors.Is(err, errBoom) {
			t.Fatalf("delete under the prefix: %v", err)
		}
	}
	fs.Reset()
	if err := del("lease/x"); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

func TestFailCommitStoresNothing(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	fs.Fail(faultstore.OpCommit, "", 1, errBoom)
	if err := write(fs, "a", "1"); !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the commit fault", err)
	}
	if got := keys(t, fs); len(got) != 0 {
		t.Fatalf("store holds %v after a failed commit", got)
	}
}

func TestFailGetAndScan(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	if err := write(fs, "a", "1"); err != nil {
		t.Fatal(err)
	}
	fs.Fail(faultstore.OpGet, "a", 1, errBoom)
	fs.Fail(faultstore.OpScan, "", 1, errBoom)
	err := fs.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.Get("a"); !errors.Is(err, errBoom) {
			t.Errorf("Get: %v", err)
		}
		if err := tx.Scan("", storage.ScanOptions{}, func(string, []byte) error { return nil }); !errors.Is(err, errBoom) {
			t.Errorf("Scan: %v", err)
		}
		v, err := tx.Get("a")
		if err != nil || string(v) != "1" {
			t.Errorf("second Get = %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRerunRunsEachClosureTwiceAndCommitsOnce(t *testing.T) {
	fs := faultstore.New(memstore.New(nil))
	fs.Rerun(true)
	runs := 0
	err := fs.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		runs++
		v, err := tx.Get("n")
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		return tx.Put("n", append(v, 'x'))
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("closure ran %d times, want 2", runs)
	}
	var got []byte
	fs.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		got, err = tx.Get("n")
		return err
	})
	if string(got) != "x" {
		t.Fatalf("value %q: the first run was not rolled back", got)
	}
	// A closure that fails is not run a second time.
	runs = 0
	errFail := errors.New("fail")
	if err := fs.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { runs++; return errFail }); !errors.Is(err, errFail) || runs != 1 {
		t.Fatalf("failing closure: err %v, runs %d", err, runs)
	}
}
