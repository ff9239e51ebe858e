package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

// memoryData is the value of -data that selects a store in memory.
const memoryData = "memory"

// openEtcd opens the store the server runs on when -etcd is given: an
// etcdstore on the comma-separated endpoints, under prefix, wrapped as
// openStore wraps its stores. It returns too the leaders of the
// background work: for each worker name ("lease", "peering"), an etcd
// election of its own, so that one server of the deployment runs each
// worker at a time, and another takes over leaderTTL after it dies. The
// caller closes the store.
func openEtcd(ctx context.Context, endpoints, prefix string, leaderTTL time.Duration, sealKeyFile string) (storage.Store, func(name string) leader.Leader, error) {
	es, err := etcdstore.Open(ctx, strings.Split(endpoints, ","), &etcdstore.Options{Prefix: prefix})
	if err != nil {
		return nil, nil, err
	}
	s, err := seal(es, sealKeyFile)
	if err != nil {
		return nil, nil, err
	}
	return s, func(name string) leader.Leader { return es.Leader(name, &etcdstore.LeaderOptions{TTL: leaderTTL}) }, nil
}

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
	return seal(inner, sealKeyFile)
}

// seal wraps inner in a sealstore with the keys of sealKeyFile, unless it
// is empty; it closes inner when it fails.
func seal(inner storage.Store, sealKeyFile string) (storage.Store, error) {
	if sealKeyFile == "" {
		return inner, nil
	}
	active, previous, err := sealstore.ReadKeyFile(sealKeyFile)
	if err == nil {
		var sealed *sealstore.Store
		if sealed, err = sealstore.New(inner, active, &sealstore.Options{Previous: previous}); err == nil {
			return sealed, nil
		}
	}
	return nil, errors.Join(err, inner.Close())
}
