package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/keelhq/keel/storage"
)

// stateKey is the key of the server's own record in its store, beside
// the adapters' data ("sys/mounts", "kv/", "identity/", …). Like every
// value of the store, it is sealed when -seal-key-file is set.
const stateKey = "server/state"

// serverState is what the server keeps about itself in its store: the
// cluster's identity, made at the first start, and the SHA-256 digest of
// the generated root token, so that the token printed at the first start
// keeps working after a restart. The token itself is never stored: the
// digest authenticates it and cannot be used as a token.
type serverState struct {
	ClusterID   string `json:"cluster_id"`
	ClusterName string `json:"cluster_name"`
	// RootTokenSHA256 is the hex SHA-256 of the generated root token;
	// "" until a server without -root-token has generated one.
	RootTokenSHA256 string `json:"root_token_sha256,omitempty"`
}

// rootDigest returns the digest of the stored root token, and false when
// none is stored or it is not a SHA-256.
func (s serverState) rootDigest() ([sha256.Size]byte, bool) {
	var d [sha256.Size]byte
	b, err := hex.DecodeString(s.RootTokenSHA256)
	if err != nil || len(b) != len(d) {
		return d, false
	}
	copy(d[:], b)
	return d, true
}

// readState returns the state stored in tx, and false when there is none.
func readState(tx storage.Tx) (serverState, bool, error) {
	var s serverState
	b, err := tx.Get(stateKey)
	if errors.Is(err, storage.ErrNotFound) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("%s: %w", stateKey, err)
	}
	return s, true, nil
}

func putState(tx storage.Tx, s serverState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Put(stateKey, b)
}

// loadState returns the server's state, and stores a new cluster identity
// first when the store has none (a new store; with -etcd, the first
// server of a deployment to start makes it and the others read it).
func loadState(ctx context.Context, store storage.Store) (serverState, error) {
	id := uuid.NewString() // made once, outside a closure that may run again
	fresh := serverState{ClusterID: id, ClusterName: "keel-cluster-" + id[:8]}
	var s serverState
	err := store.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		var ok bool
		var err error
		if s, ok, err = readState(tx); err != nil || ok {
			return err
		}
		s = fresh
		return putState(tx, s)
	})
	if err != nil {
		return serverState{}, fmt.Errorf("server state: %w", err)
	}
	return s, nil
}

// keepRootToken stores the digest of token as the root token's, unless
// the store holds one already (another server of the deployment stored
// its own first). It returns the digest that is stored now, and whether
// it is token's.
func keepRootToken(ctx context.Context, store storage.Store, token string) ([sha256.Size]byte, bool, error) {
	mine := sha256.Sum256([]byte(token))
	var stored [sha256.Size]byte
	err := store.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		s, _, err := readState(tx)
		if err != nil {
			return err
		}
		if d, ok := s.rootDigest(); ok {
			stored = d
			return nil
		}
		stored = mine
		s.RootTokenSHA256 = hex.EncodeToString(mine[:])
		return putState(tx, s)
	})
	if err != nil {
		return stored, false, fmt.Errorf("server state: %w", err)
	}
	return stored, stored == mine, nil
}
