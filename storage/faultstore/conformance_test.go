package faultstore_test

import (
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// With no fault armed, the wrapper is a store like any other.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return faultstore.New(memstore.New(nil))
	})
}
