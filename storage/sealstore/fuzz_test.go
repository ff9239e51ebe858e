package sealstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

// FuzzParseKeys: any text gives either keys of KeySize bytes or an error,
// never a panic.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("# comment\n" + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"))
	f.Add([]byte("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\n"))
	f.Add([]byte("not a key"))
	f.Fuzz(func(t *testing.T, text []byte) {
		active, previous, err := sealstore.ParseKeys(text)
		if err != nil {
			return
		}
		for _, k := range append([][]byte{active}, previous...) {
			if len(k) != sealstore.KeySize {
				t.Fatalf("key of %d bytes accepted", len(k))
			}
		}
	})
}

// FuzzOpen: whatever bytes sit in the underlying store, reading them through
// the sealed store gives an error or the value that was sealed, never
// garbage and never a panic.
func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, sealstore.KeySize)
	f.Add([]byte("value"), []byte{}, uint8(0))
	f.Add([]byte(""), []byte{0x01, 0, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, value, garbage []byte, flip uint8) {
		inner := memstore.New(nil)
		s, err := sealstore.New(inner, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put("k", value) }); err != nil {
			t.Fatal(err)
		}
		// Alter the stored bytes: flip one bit, or replace them.
		err = inner.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			v, err := tx.Get("k")
			if err != nil {
				return err
			}
			if len(garbage) > 0 {
				v = garbage
			} else {
				v[int(flip)%len(v)] ^= 1 << (flip % 8)
			}
			return tx.Put("k", v)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			got, err := tx.Get("k")
			if err == nil && !bytes.Equal(got, value) {
				t.Fatalf("altered sealed value opened to %q, sealed %q", got, value)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
