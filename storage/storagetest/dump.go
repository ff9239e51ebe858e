package storagetest

import (
	"context"
	"testing"

	"github.com/keelhq/keel/storage"
)

// Dump returns every key of s with its value, read in one View; it fails t
// when the View fails. A test of a service takes a Dump before an operation
// that must fail and compares it with one taken after, to show that the
// failed operation left the store as it was.
func Dump(t testing.TB, s storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{}, func(k string, v []byte) error {
			out[k] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatalf("storagetest.Dump: %v", err)
	}
	return out
}
