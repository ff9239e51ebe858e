package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
)

// referenceStream encodes kvs, in order, under prefix as the package
// documentation states the format, independently of the encoder.
func referenceStream(prefix string, kvs []kv) []byte {
	var b []byte
	b = append(b, "KEELSNAP"...)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.AppendUvarint(b, uint64(len(prefix)))
	b = append(b, prefix...)
	for _, e := range kvs {
		b = append(b, 0x01)
		b = binary.AppendUvarint(b, uint64(len(e.key)))
		b = append(b, e.key...)
		b = binary.AppendUvarint(b, uint64(len(e.value)))
		b = append(b, e.value...)
	}
	b = append(b, 0x00)
	b = binary.BigEndian.AppendUint64(b, uint64(len(kvs)))
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// lendless hides the optional interfaces of a store's transactions (the
// lending scan among them), so that Save reads it through Scan.
type lendless struct{ storage.Store }

func (s lendless) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.Store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, struct{ storage.Tx }{tx})
	})
}

// TestSaveWritesTheDocumentedFormat: Save writes, on every store and
// whether or not the store lends its bytes (boltstore's Views do), the
// stream the package documentation states, byte for byte: records larger
// than the encoder's chunks (a value of 300 KiB, kept by boltstore in a
// bucket of its own) and streams of many chunks included.
func TestSaveWritesTheDocumentedFormat(t *testing.T) {
	ctx := context.Background()
	var kvs []kv
	for i := range 6000 {
		kvs = append(kvs, kv{fmt.Sprintf("a/%05d", i), strings.Repeat("v", i%300)})
	}
	kvs = append(kvs,
		kv{"b/big", strings.Repeat("B", 300<<10)},
		kv{"b/empty", ""},
		kv{"b/large", strings.Repeat("L", keel.LargeValue)},
		kv{"c/" + strings.Repeat("k", 1000), "long key"},
	)
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		put(t, store, kvs[:6000])
		for _, e := range kvs[6000:] {
			put(t, store, []kv{e}) // one large value a transaction, within etcd's limits
		}
		for _, c := range []struct {
			name   string
			prefix string
			want   []kv
		}{
			{"whole", "", kvs},
			{"prefix", "b/", kvs[6000:6003]},
			{"nothing", "z/", nil},
		} {
			want := referenceStream(c.prefix, c.want)
			for _, s := range []storage.Store{store, lendless{store}} {
				var buf bytes.Buffer
				res, err := snapshot.Save(ctx, s, &buf, &snapshot.SaveOptions{Prefix: c.prefix})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("%s, %T: %d bytes differ from the %d of the documented format", c.name, s, buf.Len(), len(want))
				}
				if res.Keys != int64(len(c.want)) || res.Bytes != int64(len(want)) || res.Prefix != c.prefix {
					t.Errorf("%s, %T: result %+v, want %d keys, %d bytes", c.name, s, res, len(c.want), len(want))
				}
			}
		}
	})
}

// failingAfter fails every Write once n bytes were written, and counts the
// Writes it was given after failing.
type failingAfter struct {
	n, written int
	late       int
}

func (w *failingAfter) Write(p []byte) (int, error) {
	if w.written+len(p) > w.n {
		w.late++
		return 0, errDisk
	}
	w.written += len(p)
	return len(p), nil
}

// TestSaveStopsAtWriteError: a writer that fails in the middle of a long
// stream fails Save with keel.KindUnavailable wrapping its error, and is
// given no Write after the one that failed.
func TestSaveStopsAtWriteError(t *testing.T) {
	store := everystore.Bolt(t)
	put(t, store, sample(20000, "k/"))
	w := &failingAfter{n: 200 << 10}
	_, err := snapshot.Save(context.Background(), store, w, nil)
	if keel.KindOf(err) != keel.KindUnavailable || !errors.Is(err, errDisk) {
		t.Errorf("Save: %v", err)
	}
	if w.late != 1 {
		t.Errorf("%d Writes after the first failure, want none", w.late-1)
	}
}
