package peering

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// exportedServicesName is the only name of the exported-services entry, as
// in Consul without partitions.
const exportedServicesName = "default"

// exportedKey is the key of the exported-services entry.
const exportedKey = "exported-services/" + exportedServicesName

// ExportedServicesEntry is Consul's config entry of kind
// "exported-services": which services this cluster exports to which
// peers. PutExportedServicesEntry takes it, GetExportedServicesEntry
// returns it; values returned are copies owned by the caller.
type ExportedServicesEntry struct {
	// Name is "default", the only name an entry has; empty means it.
	Name string
	// Partition must be empty or DefaultPartition, the only partition
	// served. It is not stored: an entry read has it empty.
	Partition string `json:",omitempty"`
	// Services lists each exported service with the peers that consume
	// it.
	Services []ExportedService
	// Meta is the caller's metadata, limited as a peering's.
	Meta map[string]string
	// CreateIndex and ModifyIndex are the change indexes of the creation
	// and of the last change: set by the Service, ignored by
	// PutExportedServicesEntry (Consul's check-and-set is not served).
	CreateIndex, ModifyIndex uint64
}

// ExportedService is one service of an ExportedServicesEntry.
type ExportedService struct {
	// Name is the service name; not empty.
	Name string
	// Consumers are the local names of the peerings the service is
	// exported to; not empty.
	Consumers []string
}

// PutExportedServicesEntry stores entry, replacing the one stored, and
// sets the services exported to each peering it names, as
// PutExportedServices does: a peering gets the names of the services
// listing it among their consumers, and a peering named by the previous
// entry but not by this one gets none. Peerings that do not exist yet, or
// are being deleted, are skipped; a peering created later (token or
// establish) starts with the services the stored entry exports to its
// name. It needs peering:write on every peering whose exports change
// (named by the previous or the new entry). All of it is one transaction,
// so on a bounded store the entry may name at most
// Limits().MaxConsumerPeers peerings; a larger one is refused before
// anything is written, with keel.KindInvalid on "Services" naming the
// limit. The entry's rules (its Name, Partition, Meta, services and
// peers) are keel.KindInvalid naming each field; a nil entry is the empty
// one, which exports nothing.
func (s *Service) PutExportedServicesEntry(ctx context.Context, entry *ExportedServicesEntry) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "peering.PutExportedServicesEntry", "", entry, func(ctx context.Context) error {
		return s.putExportedServicesEntry(ctx, entry)
	})
}

func (s *Service) putExportedServicesEntry(ctx context.Context, entry *ExportedServicesEntry) (err error) {
	defer prefixErr(&err)
	e, err := normEntry(entry, s.Limits().MaxConsumerPeers)
	if err != nil {
		return err
	}
	want := e.exports()
	err = s.update(ctx, func(tx storage.Tx, idx uint64) (bool, error) {
		old, err := getEntry(tx)
		if err != nil {
			return false, err
		}
		peers := map[string][]string{}
		for name := range old.exports() {
			peers[name] = []string{}
		}
		for name, svcs := range want {
			peers[name] = svcs
		}
		for _, name := range slices.Sorted(maps.Keys(peers)) {
			if err := keel.Authorize(ctx, s.authz, keel.CapPeeringWrite, resource(name)); err != nil {
				return false, err
			}
		}
		for name, svcs := range peers {
			r, err := getByName(tx, name)
			if errors.Is(err, keel.KindNotFound) {
				continue
			}
			if err != nil {
				return false, err
			}
			if !r.DeletedAt.IsZero() || slices.Equal(r.Exported, svcs) {
				continue
			}
			r.Exported = svcs
			r.NextHeartbeat = time.Time{} // tell the peer at once
			if err := put(tx, r, idx); err != nil {
				return false, err
			}
		}
		e.CreateIndex = old.CreateIndex
		if e.CreateIndex == 0 {
			e.CreateIndex = idx
		}
		e.ModifyIndex = idx
		raw, err := json.Marshal(e)
		if err != nil {
			return false, fmt.Errorf("exported services: encoding: %v: %w", err, keel.KindInternal)
		}
		return true, tx.Put(exportedKey, raw)
	})
	if err != nil {
		return wrapf(err, "set exported services")
	}
	s.Wake()
	return nil
}

// GetExportedServicesEntry returns the exported-services entry named name
// ("default") and the change index of the read. It needs
// peering:read on every peering the entry names. A name other than
// "default", or an entry never set, gives keel.KindNotFound
// with the index.
func (s *Service) GetExportedServicesEntry(ctx context.Context, name string) (_ *ExportedServicesEntry, _ uint64, err error) {
	defer prefixErr(&err)
	ctx, op, err := keel.Begin(ctx, s.obs, s.clock, "peering.GetExportedServicesEntry", name, nil)
	if err != nil {
		return nil, 0, err
	}
	e, index, err := s.getExportedServicesEntry(ctx, name)
	if op != nil {
		op.End(e, err)
	}
	return e, index, err
}

func (s *Service) getExportedServicesEntry(ctx context.Context, name string) (_ *ExportedServicesEntry, _ uint64, err error) {
	defer prefixErr(&err)
	var e *ExportedServicesEntry
	var idx uint64
	err = s.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
		var err error
		if idx, err = currentIndex(tx); err != nil {
			return err
		}
		if name != exportedServicesName {
			return fmt.Errorf("exported-services entry %q: %w", name, keel.KindNotFound)
		}
		if e, err = getEntry(tx); err != nil {
			return err
		}
		if e.ModifyIndex == 0 {
			return fmt.Errorf("exported-services entry %q: %w", name, keel.KindNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, idx, err
	}
	for _, peer := range slices.Sorted(maps.Keys(e.exports())) {
		if err := keel.Authorize(ctx, s.authz, keel.CapPeeringRead, resource(peer)); err != nil {
			return nil, idx, err
		}
	}
	return e, idx, nil
}

// exportsFor returns the services the stored entry exports to the
// peering name, for a peering being created.
func exportsFor(tx storage.Tx, name string) ([]string, error) {
	e, err := getEntry(tx)
	if err != nil {
		return nil, err
	}
	return e.exports()[name], nil
}

// exports returns, for each peering named, the sorted names of the
// services exported to it.
func (e *ExportedServicesEntry) exports() map[string][]string {
	out := map[string][]string{}
	for _, svc := range e.Services {
		for _, peer := range svc.Consumers {
			out[peer] = append(out[peer], svc.Name)
		}
	}
	for peer, svcs := range out {
		slices.Sort(svcs)
		out[peer] = slices.Compact(svcs)
	}
	return out
}

// getEntry returns the stored entry; an empty one when none is stored.
func getEntry(tx storage.Tx) (*ExportedServicesEntry, error) {
	e := &ExportedServicesEntry{Name: exportedServicesName}
	raw, err := tx.Get(exportedKey)
	if errors.Is(err, storage.ErrNotFound) {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, fmt.Errorf("exported services: decoding: %v: %w", err, keel.KindInternal)
	}
	return e, nil
}

// Limits are the limits of a Service that depend on its store, as
// Service.Limits reports them. The fixed limits are stated where they
// apply (TokenRequest.Meta) and MaxWait is a constant.
type Limits struct {
	// MaxConsumerPeers is the most peerings one exported-services entry
	// may name as consumers, counted once across all its services; 0 when
	// the store bounds no transaction (memstore and boltstore by
	// default). It is 31 on etcdstore's default limits (128 operations
	// and 128 reads per transaction).
	//
	// PutExportedServicesEntry changes every peering concerned in one
	// transaction: it reads each peering the stored entry or the new one
	// names, and writes the two keys of each whose exports change,
	// besides the entry and the change index. So on a bounded store an
	// entry may name at most min((MaxTxOps-2)/4, (MaxTxReads-2)/2)
	// peerings: the stored entry (at most as many) and the new one may
	// then name different peerings and still fit. A larger entry is
	// refused before anything is written, with keel.KindInvalid on
	// "Services" naming the limit.
	MaxConsumerPeers int
}

// Limits returns the limits of the Service on its store.
func (s *Service) Limits() Limits {
	l := s.store.Limits()
	n := 0
	if l.MaxTxOps > 0 {
		n = max(1, (l.MaxTxOps-2)/4)
	}
	if l.MaxTxReads > 0 {
		n = minPositive(n, max(1, (l.MaxTxReads-2)/2))
	}
	return Limits{MaxConsumerPeers: n}
}

// minPositive returns the smaller of a and b, where 0 means no bound.
func minPositive(a, b int) int {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// normEntry validates entry and returns its normal form: the default
// name, consumers sorted and without duplicates. maxPeers, when positive,
// bounds the distinct consumers across the services
// (Limits.MaxConsumerPeers).
func normEntry(entry *ExportedServicesEntry, maxPeers int) (*ExportedServicesEntry, error) {
	var v keel.Validation
	if entry == nil {
		entry = &ExportedServicesEntry{}
	}
	e := &ExportedServicesEntry{Name: entry.Name}
	if e.Name == "" {
		e.Name = exportedServicesName
	}
	if e.Name != exportedServicesName {
		v.Add("Name", "the exported-services entry must be named %q", exportedServicesName)
	}
	checkPartition(&v, entry.Partition)
	checkMeta(&v, entry.Meta)
	if len(entry.Meta) > 0 {
		e.Meta = maps.Clone(entry.Meta)
	}
	for i, svc := range entry.Services {
		field := fmt.Sprintf("Services[%d]", i)
		if svc.Name == "" {
			v.Add(field+".Name", "the service name is empty")
		}
		if len(svc.Consumers) == 0 {
			v.Add(field+".Consumers", "at least one consumer is required")
		}
		var consumers []string
		for j, peer := range svc.Consumers {
			if !validName(peer) {
				v.Add(fmt.Sprintf("%s.Consumers[%d].Peer", field, j), "%q is not a valid peer name", peer)
			}
			consumers = append(consumers, peer)
		}
		slices.Sort(consumers)
		e.Services = append(e.Services, ExportedService{Name: svc.Name, Consumers: slices.Compact(consumers)})
	}
	if n := len(e.exports()); maxPeers > 0 && n > maxPeers {
		v.Add("Services", "names %d consumer peerings, at most %d on this store (see Limits.MaxConsumerPeers)", n, maxPeers)
	}
	return e, v.Err()
}
