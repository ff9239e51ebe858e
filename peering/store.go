package peering

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Keys under the package's prefix.
const (
	namePrefix = "name/" // name/<name> -> record
	idPrefix   = "id/"   // id/<id> -> name
	indexKey   = "index" // the last change index, decimal
)

// Roles of a cluster in a peering.
const (
	roleAcceptor = "acceptor" // generated the token
	roleDialer   = "dialer"   // established with the token
)

// record is a peering as stored.
type record struct {
	ID                  string            `json:"id"`
	Name                string            `json:"name"`
	Role                string            `json:"role"`
	State               State             `json:"state"`
	PeerID              string            `json:"peer_id,omitempty"`
	PeerServerName      string            `json:"peer_server_name,omitempty"`
	PeerServerAddresses []string          `json:"peer_server_addresses,omitempty"`
	Meta                map[string]string `json:"meta,omitempty"`
	Remote              Remote            `json:"remote"`
	SecretDigest        []byte            `json:"secret_digest,omitempty"` // of the unused establishment secret
	StreamSecret        string            `json:"stream_secret,omitempty"`
	Exported            []string          `json:"exported,omitempty"`
	Imported            []string          `json:"imported,omitempty"`
	LastHeartbeat       time.Time         `json:"last_heartbeat"`
	LastReceive         time.Time         `json:"last_receive"`
	LastSend            time.Time         `json:"last_send"`
	NextHeartbeat       time.Time         `json:"next_heartbeat"`
	CreateIndex         uint64            `json:"create_index"`
	ModifyIndex         uint64            `json:"modify_index"`
	DeletedAt           time.Time         `json:"deleted_at"`
	PeerTold            bool              `json:"peer_told,omitempty"` // no need to tell the peer of the deletion
}

func digest(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

func sameDigest(d []byte, secret string) bool {
	return len(d) > 0 && subtle.ConstantTimeCompare(d, digest(secret)) == 1
}

func sameSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// peering returns the public view of r.
func (r *record) peering() *Peering {
	p := &Peering{
		ID: r.ID, Name: r.Name, Partition: DefaultPartition, State: r.State,
		PeerID: r.PeerID, PeerServerName: r.PeerServerName,
		PeerServerAddresses: slices.Clone(r.PeerServerAddresses),
		StreamStatus: StreamStatus{
			ImportedServices: slices.Clone(r.Imported),
			ExportedServices: slices.Clone(r.Exported),
			LastHeartbeat:    r.LastHeartbeat, LastReceive: r.LastReceive, LastSend: r.LastSend,
		},
		Meta:        maps.Clone(r.Meta),
		CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex,
		Remote: r.Remote, DeletedAt: r.DeletedAt,
	}
	if p.Meta == nil {
		p.Meta = map[string]string{}
	}
	if p.StreamStatus.ExportedServices == nil {
		p.StreamStatus.ExportedServices = []string{}
	}
	return p
}

func getByName(tx storage.Tx, name string) (*record, error) {
	raw, err := tx.Get(namePrefix + name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("peering %q: %w", name, keel.KindNotFound)
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("peering %q: decoding: %v: %w", name, err, keel.KindInternal)
	}
	return &r, nil
}

func getByID(tx storage.Tx, id string) (*record, error) {
	if id == "" {
		return nil, fmt.Errorf("peering id %q: %w", id, keel.KindNotFound)
	}
	name, err := tx.Get(idPrefix + id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("peering id %q: %w", id, keel.KindNotFound)
	}
	if err != nil {
		return nil, err
	}
	return getByName(tx, string(name))
}

// put writes r with ModifyIndex idx (and CreateIndex when new).
func put(tx storage.Tx, r *record, idx uint64) error {
	if r.CreateIndex == 0 {
		r.CreateIndex = idx
	}
	r.ModifyIndex = idx
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("peering %q: encoding: %v: %w", r.Name, err, keel.KindInternal)
	}
	if err := tx.Put(namePrefix+r.Name, raw); err != nil {
		return err
	}
	return tx.Put(idPrefix+r.ID, []byte(r.Name))
}

func remove(tx storage.Tx, r *record) error {
	if err := tx.Delete(namePrefix + r.Name); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err := tx.Delete(idPrefix + r.ID); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return nil
}

// currentIndex returns the last change index, at least 1.
func currentIndex(tx storage.Tx) (uint64, error) {
	raw, err := tx.Get(indexKey)
	if errors.Is(err, storage.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("peering index %q: %v: %w", raw, err, keel.KindInternal)
	}
	return max(n, 1), nil
}

// update runs fn in one transaction with the next change index; fn
// reports whether it changed anything. After a commit that changed
// something, blocked reads wake up.
func (s *Service) update(ctx context.Context, fn func(tx storage.Tx, idx uint64) (bool, error)) error {
	changed := false
	err := s.store.Update(ctx, func(_ context.Context, tx storage.Tx) error {
		cur, err := currentIndex(tx)
		if err != nil {
			return err
		}
		idx := cur + 1
		changed, err = fn(tx, idx)
		if err != nil || !changed {
			return err
		}
		return tx.Put(indexKey, []byte(strconv.FormatUint(idx, 10)))
	})
	if err == nil && changed {
		s.notify()
	}
	return err
}

// notify wakes every blocked read.
func (s *Service) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// watch returns a channel closed at the next change.
func (s *Service) watch() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
