package snapshot_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// FuzzRestore: whatever the bytes, Restore does not panic, and either
// restores exactly the keys of an intact stream or refuses with
// keel.KindInvalid or keel.KindTooLarge, leaving the store as it was.
func FuzzRestore(f *testing.F) {
	src := memstore.New(nil)
	defer src.Close()
	put(f, src, sample(5, "a/", "b/"))
	f.Add(save(f, src, nil))
	f.Add(save(f, src, &snapshot.SaveOptions{Prefix: "b/"}))
	f.Add(save(f, memstore.New(nil), nil))
	f.Add([]byte("KEELSNAP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		target := memstore.New(&memstore.Options{Limits: storage.Limits{MaxKeySize: 64, MaxValueSize: 1 << 10}})
		defer target.Close()
		put(t, target, []kv{{"old", "1"}})
		res, err := snapshot.Restore(context.Background(), bytes.NewReader(b), target, &snapshot.RestoreOptions{Replace: true})
		switch keel.KindOf(err) {
		case keel.KindNone:
			var again bytes.Buffer
			saved, err := snapshot.Save(context.Background(), target, &again, &snapshot.SaveOptions{Prefix: res.Prefix})
			if err != nil {
				t.Fatal(err)
			}
			if saved.Keys != res.Keys || !bytes.Equal(again.Bytes(), b) {
				t.Fatalf("restored %d keys, saved again %d: the streams differ", res.Keys, saved.Keys)
			}
		case keel.KindInvalid, keel.KindTooLarge:
			equal(t, dump(t, target), []kv{{"old", "1"}})
		default:
			t.Fatalf("%v: kind %v", err, keel.KindOf(err))
		}
	})
}
