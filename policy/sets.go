package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// PolicySet is a policy set as read: the minimal registry that makes a
// policy's relationships.policy-sets and policy-set-count real.
type PolicySet struct {
	ID        string
	Org       string
	Name      string
	PolicyIDs []string // sorted
}

type setRecord struct {
	ID   string `json:"id"`
	Org  string `json:"org"`
	Name string `json:"name"`
}

func getSet(tx storage.Tx, id string) (*setRecord, error) {
	if !validID(id) {
		return nil, notFound(fmt.Sprintf("policy set %q", id))
	}
	raw, err := tx.Get(setKey(id))
	if isNotFound(err) {
		return nil, notFound(fmt.Sprintf("policy set %q", id))
	}
	if err != nil {
		return nil, err
	}
	var rec setRecord
	if err := decode(raw, &rec); err != nil {
		return nil, fmt.Errorf("record of policy set %q is corrupt (%v): %w", id, err, keel.ErrInternal)
	}
	return &rec, nil
}

// join makes policy a member of set.
func join(tx storage.Tx, set, policy string) error {
	if err := tx.Put(setPolicies(set)+policy, nil); err != nil {
		return err
	}
	return tx.Put(policySets(policy)+set, nil)
}

// CreateSet creates a policy set in org, with the given member policies
// (each of org). Rights and not-found rules are those of policies.
func (s *Service) CreateSet(ctx context.Context, org, name string, policyIDs []string) (PolicySet, error) {
	if err := s.allowed(ctx, org); err != nil {
		return PolicySet{}, err
	}
	rec := setRecord{ID: newID("polset"), Org: org, Name: name}
	err := s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
			return err
		}
		if name == "" {
			return keel.Invalid("Name", "is required")
		}
		if !validName(name) {
			return keel.Invalid("Name", "must be letters, numbers, - and _")
		}
		raw, err := encode(rec)
		if err != nil {
			return fmt.Errorf("encode policy set: %v: %w", err, keel.ErrInternal)
		}
		if err := tx.Put(setKey(rec.ID), raw); err != nil {
			return err
		}
		if err := tx.Put(orgSets(org)+rec.ID, nil); err != nil {
			return err
		}
		var v keel.Validation
		for i, id := range policyIDs {
			p, err := getRecord(tx, id)
			if err != nil || p.Org != org {
				v.Add(fmt.Sprintf("PolicyIDs[%d]", i), "no policy %q in %q", id, org)
				continue
			}
			if err := join(tx, rec.ID, id); err != nil {
				return err
			}
		}
		return v.Err()
	})
	if err != nil {
		return PolicySet{}, err
	}
	return s.GetSet(ctx, rec.ID)
}

// GetSet returns the policy set id with its members. A set the caller may
// not manage, or of an organization being deleted, is not found.
func (s *Service) GetSet(ctx context.Context, id string) (PolicySet, error) {
	var out PolicySet
	err := s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := getSet(tx, id)
		if err != nil {
			return err
		}
		if err := keel.Authorize(ctx, s.authz, keel.CapManagePolicies, resource(rec.Org)); err != nil {
			if errors.Is(err, keel.ErrForbidden) {
				return notFound(fmt.Sprintf("policy set %q", id))
			}
			return err
		}
		if err := orgExists(live, rec.Org, fmt.Sprintf("policy set %q", id)); err != nil {
			return err
		}
		out = PolicySet{ID: rec.ID, Org: rec.Org, Name: rec.Name, PolicyIDs: []string{}}
		prefix := setPolicies(id)
		return tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			out.PolicyIDs = append(out.PolicyIDs, k[len(prefix):])
			return nil
		})
	})
	return out, err
}
