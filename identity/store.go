package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Keys, relative to the "identity/" view:
//
//	group/id/<id>                 the record of a group (JSON)
//	group/name/<folded name>      {"id", "name"}: the case-folded name index
//	edge/member/<parent>/<child>  empty: child is a member group of parent
//	edge/parent/<child>/<parent>  empty: the same edge, seen from the child
//
// Member groups are edges, not a list in the record, so that adding one
// member to a group of n members writes two keys, whatever n.
const (
	groupPrefix = "group/id/"
	namePrefix  = "group/name/"
	edgePrefix  = "edge/"
)

func groupKey(id string) string         { return groupPrefix + id }
func nameKey(name string) string        { return namePrefix + foldName(name) }
func memberPrefix(parent string) string { return edgePrefix + "member/" + parent + "/" }
func parentPrefix(child string) string  { return edgePrefix + "parent/" + child + "/" }

// foldName is the form of a name in the name index: its Unicode lower
// case, as Vault's case-insensitive name index has it.
func foldName(name string) string { return strings.ToLower(name) }

// record is a group as stored, without its member and parent groups, which
// are edges.
type record struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Type            string            `json:"type"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Policies        []string          `json:"policies,omitempty"`
	MemberEntityIDs []string          `json:"member_entity_ids,omitempty"`
	CreationTime    time.Time         `json:"creation_time"`
	LastUpdateTime  time.Time         `json:"last_update_time"`
	ModifyIndex     uint64            `json:"modify_index"`
}

// nameEntry is the value of a name index key.
type nameEntry struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func decodeNameEntry(raw []byte) (nameEntry, error) {
	var e nameEntry
	err := json.Unmarshal(raw, &e)
	if err == nil && e.ID == "" {
		err = errors.New("no id")
	}
	return e, err
}

// getRecord returns the record of id, or an error of kind
// keel.KindNotFound.
func getRecord(tx storage.Tx, id string) (*record, error) {
	if id == "" || strings.Contains(id, "/") {
		return nil, fmt.Errorf("no group %q: %w", id, keel.KindNotFound)
	}
	raw, err := tx.Get(groupKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("no group %q: %w", id, keel.KindNotFound)
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(raw, &rec); err != nil || rec.ID != id {
		return nil, fmt.Errorf("record of group %q is corrupt (%v): %w", id, err, keel.KindInternal)
	}
	return &rec, nil
}

// lookupName returns the id of the group named name, ignoring case, or ""
// when there is none.
func lookupName(tx storage.Tx, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	raw, err := tx.Get(nameKey(name))
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	e, err := decodeNameEntry(raw)
	if err != nil {
		return "", fmt.Errorf("name index entry of %q is corrupt (%v): %w", name, err, keel.KindInternal)
	}
	return e.ID, nil
}

// getRecordByName returns the record of the group named name, ignoring
// case, or an error of kind keel.KindNotFound.
func getRecordByName(tx storage.Tx, name string) (*record, error) {
	id, err := lookupName(tx, name)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("no group named %q: %w", name, keel.KindNotFound)
	}
	rec, err := getRecord(tx, id)
	if errors.Is(err, keel.KindNotFound) {
		return nil, fmt.Errorf("name %q points to missing group %q: %w", name, id, keel.KindInternal)
	}
	return rec, err
}

func putRecord(tx storage.Tx, rec *record) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode group %q: %v: %w", rec.ID, err, keel.KindInternal)
	}
	return tx.Put(groupKey(rec.ID), raw)
}

func putName(tx storage.Tx, rec *record) error {
	raw, err := json.Marshal(nameEntry{ID: rec.ID, Name: rec.Name})
	if err != nil {
		return fmt.Errorf("encode name of group %q: %v: %w", rec.ID, err, keel.KindInternal)
	}
	return tx.Put(nameKey(rec.Name), raw)
}

// edges returns the last segments of the keys under prefix, in order: the
// member or parent ids of a group. Never nil.
func edges(tx storage.Tx, prefix string) ([]string, error) {
	out := []string{}
	err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
		out = append(out, key[len(prefix):])
		return nil
	})
	return out, err
}

// link makes child a member of parent, in both directions.
func link(tx storage.Tx, parent, child string) error {
	if err := tx.Put(memberPrefix(parent)+child, []byte{}); err != nil {
		return err
	}
	return tx.Put(parentPrefix(child)+parent, []byte{})
}

// unlink removes child from parent's members, in both directions.
func unlink(tx storage.Tx, parent, child string) error {
	if err := tx.Delete(memberPrefix(parent) + child); err != nil {
		return err
	}
	return tx.Delete(parentPrefix(child) + parent)
}
