package main

import (
	"errors"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

// memoryData is the value of -data that selects a store in memory.
const memoryData = "memory"

// openStore opens the store the server runs on: a bbolt file at data, or a
// store in memory when data is "memory"; wrapped, when sealKeyFile is not
// empty, in a sealstore that encrypts every value with the keys of that
// file. The caller closes the store.
func openStore(data, sealKeyFile string) (storage.Store, error) {
	var inner storage.Store
	if data == memoryData {
		inner = memstore.New(nil)
	} else {
		bs, err := boltstore.Open(data, nil)
		if err != nil {
			return nil, err
		}
		inner = bs
	}
	if sealKeyFile == "" {
		return inner, nil
	}
	active, previous, err := sealstore.ReadKeyFile(sealKeyFile)
	if err == nil {
		var sealed *sealstore.Store
		if sealed, err = sealstore.New(inner, active, previous...); err == nil {
			return sealed, nil
		}
	}
	return nil, errors.Join(err, inner.Close())
}
