package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// CreateRequest is the input of Create: a nil field is not given (the
// default).
type CreateRequest struct {
	Name        *string
	Description *string
	// Kind is "sentinel" (the default) or "opa".
	Kind *string
	// Query is required for OPA policies and refused for Sentinel ones.
	Query *string
	// Enforce must have exactly one element when sent.
	Enforce *[]Enforce
	// EnforcementLevel is the current API's form of the mode; it is used
	// when Enforce is not sent.
	EnforcementLevel *string
	// PolicySetIDs are sets of the organization the policy joins.
	PolicySetIDs []string
}

// UpdateRequest is the input of Update: a nil field is not given (left as
// it is). The name cannot change.
type UpdateRequest struct {
	Description      *string
	Query            *string
	Enforce          *[]Enforce
	EnforcementLevel *string
}

// levels returns the enforcement levels of a kind.
func levels(kind string) []string {
	if kind == OPA {
		return []string{Advisory, Mandatory}
	}
	return []string{HardMandatory, SoftMandatory, Advisory}
}

// ownFile reports whether path names the policy's own file: the
// specification's "<name>.policy", or, as HCP Terraform's clients name
// it, "<name>.sentinel" for a Sentinel policy and "<name>.rego" for an OPA
// policy.
func ownFile(path, name, kind string) bool {
	ext := ".sentinel"
	if kind == OPA {
		ext = ".rego"
	}
	return path == name+".policy" || path == name+ext
}

// resolveEnforce returns the enforcement of a policy named name from what
// was sent, recording broken rules in v; nil when nothing was sent.
func resolveEnforce(v *keel.Validation, name, kind string, enforce *[]Enforce, level *string) []Enforce {
	valid := levels(kind)
	if level != nil && !slices.Contains(valid, *level) {
		v.Add("EnforcementLevel", "must be one of %v", valid)
	}
	switch {
	case enforce != nil:
		if len(*enforce) != 1 {
			v.Add("Enforce", "must have exactly one element")
			return nil
		}
		e := (*enforce)[0]
		if e.Path == "" {
			v.Add("Enforce[0].Path", "is required")
		}
		if e.Mode == "" {
			e.Mode = valid[0]
		}
		if !slices.Contains(valid, e.Mode) {
			v.Add("Enforce[0].Mode", "must be one of %v", valid)
		}
		if !ownFile(e.Path, name, kind) {
			// The specification: a path that does not match the policy
			// file name gets the hard-mandatory mode.
			e.Mode = valid[0]
		}
		return []Enforce{e}
	case level != nil:
		return []Enforce{{Path: name + ".policy", Mode: *level}}
	}
	return nil
}

// Create creates a policy object (its code is uploaded afterwards). The
// organization must exist and the caller must hold manage-policies on it;
// otherwise keel.KindNotFound.
func (s *Service) Create(ctx context.Context, org string, in CreateRequest) (_ Policy, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.Create", org, in, func(ctx context.Context) (Policy, error) {
		return s.doCreate(ctx, org, in)
	})
}

func (s *Service) doCreate(ctx context.Context, org string, in CreateRequest) (_ Policy, err error) {
	defer prefixErr(&err)
	if err := s.allowed(ctx, org); err != nil {
		return Policy{}, err
	}
	// Broken rules are reported once the organization is known to exist:
	// an unknown organization is not found, whatever the body.
	var v keel.Validation
	name := ""
	if in.Name == nil {
		v.Add("Name", "is required")
	} else if name = *in.Name; !validName(name) {
		v.Add("Name", "must be letters, numbers, - and _")
	}
	kind := Sentinel
	if in.Kind != nil && *in.Kind != "" {
		kind = *in.Kind
	}
	switch {
	case kind != Sentinel && kind != OPA:
		v.Add("Kind", "must be sentinel or opa")
	case kind == OPA && (in.Query == nil || *in.Query == ""):
		v.Add("Query", "is required for opa policies")
	case kind == Sentinel && in.Query != nil:
		v.Add("Query", "is only valid for opa policies")
	}
	enforce := resolveEnforce(&v, name, kind, in.Enforce, in.EnforcementLevel)
	if enforce == nil && in.Enforce == nil {
		v.Add("Enforce", "is required unless an enforcement level is given")
	}
	invalid := v.Err()
	rec := record{ID: newID("pol"), Org: org, Name: name, Description: in.Description, Kind: kind, Query: in.Query, Enforce: enforce}
	var out Policy
	err = s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
			return err
		}
		if invalid != nil {
			return invalid
		}
		key := nameIx(org) + fold(name)
		if _, err := tx.Get(key); err == nil {
			return fmt.Errorf("policy name %q is taken in %q: %w", name, org, keel.KindAlreadyExists)
		} else if !isNotFound(err) {
			return err
		}
		if err := s.joinSets(tx, &rec, in.PolicySetIDs); err != nil {
			return err
		}
		if err := tx.Put(key, []byte(rec.ID)); err != nil {
			return err
		}
		if err := addCount(tx, org, 1); err != nil {
			return err
		}
		if err := putRecord(tx, &rec); err != nil {
			return err
		}
		var err error
		out, err = s.public(tx, &rec)
		return err
	})
	return out, err
}

// Get returns the policy id; one the caller may not manage is not found.
func (s *Service) Get(ctx context.Context, id string) (_ Policy, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.Get", id, nil, func(ctx context.Context) (Policy, error) {
		return s.doGet(ctx, id)
	})
}

func (s *Service) doGet(ctx context.Context, id string) (_ Policy, err error) {
	defer prefixErr(&err)
	var out Policy
	err = s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visible(ctx, tx, live, id)
		if err != nil {
			return err
		}
		out, err = s.public(tx, rec)
		return err
	})
	return out, err
}

// Update changes the description, the query and the enforcement; Enforce
// replaces the whole map, its path checked against the original name. It
// sets UpdatedAt.
func (s *Service) Update(ctx context.Context, id string, in UpdateRequest) (_ Policy, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.Update", id, in, func(ctx context.Context) (Policy, error) {
		return s.doUpdate(ctx, id, in)
	})
}

func (s *Service) doUpdate(ctx context.Context, id string, in UpdateRequest) (_ Policy, err error) {
	defer prefixErr(&err)
	now := ms(s.clock.Now())
	var out Policy
	err = s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visible(ctx, tx, live, id)
		if err != nil {
			return err
		}
		var v keel.Validation
		if in.Query != nil && rec.Kind != OPA {
			v.Add("Query", "is only valid for opa policies")
		}
		if in.Query != nil && rec.Kind == OPA && *in.Query == "" {
			v.Add("Query", "is required for opa policies")
		}
		enforce := resolveEnforce(&v, rec.Name, rec.Kind, in.Enforce, in.EnforcementLevel)
		if err := v.Err(); err != nil {
			return err
		}
		if enforce != nil {
			rec.Enforce = enforce
		}
		if in.Description != nil {
			rec.Description = in.Description
		}
		if in.Query != nil {
			rec.Query = in.Query
		}
		rec.UpdatedAt = &now
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		out, err = s.public(tx, rec)
		return err
	})
	return out, err
}

// codeRoom is what an upload writes besides the code, at most, in the
// transaction that writes it: the policy's record and the two keys.
const codeRoom = 4 << 10

// Limits are the limits of a Service that depend on its store (see
// storage.Limits); Service.Limits reports them.
type Limits struct {
	// MaxCodeBytes is the most bytes of code Upload accepts: MaxCodeSize
	// (10 MiB), or less on a store that bounds a value or the bytes one
	// transaction writes (storage.Limits MaxValueSize and MaxTxBytes; 4
	// KiB of the transaction are kept for the policy's record and keys).
	// It is 1,429,504 bytes (1,396 KiB) on etcdstore's default limits,
	// 10 MiB on memstore and boltstore.
	MaxCodeBytes int
	// MaxSetMembers is the largest number of members (policies,
	// workspaces, projects and exclusions together) a policy set may
	// have: every operation on a set, its deletion included, then fits in
	// one transaction of the store (storage.Limits MaxTxOps and
	// MaxTxReads). With etcd's default limits (128 operations, 128 reads)
	// it is 62; a store that states no limit allows any number
	// (math.MaxInt). CreateSet and AddSetMembers refuse a set that would
	// grow past it, up front, with keel.KindTooLarge.
	MaxSetMembers int
	// MaxMemberSets is the largest number of sets whose edges the
	// deletion of one policy, workspace or project can delete in one
	// transaction of the store: two edges and the set's counts per set.
	// With etcd's default limits it is 40; a store that states no limit
	// allows any number. A deletion of a member of more sets is refused
	// with keel.KindTooLarge and leaves the store as it was: remove the
	// member from some sets first. Create refuses a policy that would
	// join more.
	MaxMemberSets int
}

// Limits returns the limits of the Service on its store.
func (s *Service) Limits() Limits {
	return Limits{MaxCodeBytes: s.maxCodeBytes(), MaxSetMembers: s.maxSetMembers(), MaxMemberSets: s.maxMemberSets()}
}

// maxCodeBytes is Limits().MaxCodeBytes: the most bytes of code Upload accepts on the Service's
// store: MaxCodeSize (10 MiB), or less on a store that bounds a value or
// the bytes one transaction writes (storage.Limits MaxValueSize and
// MaxTxBytes; 4 KiB of the transaction are kept for the policy's record
// and keys). It is 1,429,504 bytes (1,396 KiB) on etcdstore's default
// limits, 10 MiB on memstore and boltstore.
func (s *Service) maxCodeBytes() int {
	l := s.store.Limits()
	n := MaxCodeSize
	if l.MaxValueSize > 0 {
		n = min(n, l.MaxValueSize)
	}
	if l.MaxTxBytes > 0 {
		n = min(n, l.MaxTxBytes-codeRoom)
	}
	return max(n, 0)
}

// Upload replaces the policy's code with code, at most Limits().MaxCodeBytes
// bytes (MaxCodeSize, or less on a store of smaller values: a longer code
// is keel.KindTooLarge, refused before anything is read or saved), and
// sets UpdatedAt.
func (s *Service) Upload(ctx context.Context, id string, code []byte) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "policy.Upload", id, code, func(ctx context.Context) error {
		return s.upload(ctx, id, code)
	})
}

func (s *Service) upload(ctx context.Context, id string, code []byte) (err error) {
	defer prefixErr(&err)
	if most := s.maxCodeBytes(); len(code) > most {
		if most == MaxCodeSize {
			return fmt.Errorf("policy code of %d bytes, at most %d (MaxCodeSize): %w", len(code), most, keel.KindTooLarge)
		}
		l := s.store.Limits()
		return fmt.Errorf("policy code of %d bytes, at most %d on this store (storage.Limits MaxValueSize %d, MaxTxBytes %d): %w",
			len(code), most, l.MaxValueSize, l.MaxTxBytes, keel.KindTooLarge)
	}
	now := ms(s.clock.Now())
	return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visible(ctx, tx, live, id)
		if err != nil {
			return err
		}
		rec.UpdatedAt = &now
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		return tx.Put(codeKey(id), code)
	})
}

// Download returns the code last uploaded; keel.KindNotFound before the
// first upload. Code of keel.LargeValue bytes or more is reserved through
// the context's keel.Reserver before it is loaded; a refused reservation
// is Download's error.
func (s *Service) Download(ctx context.Context, id string) (_ []byte, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.Download", id, nil, func(ctx context.Context) ([]byte, error) {
		return s.download(ctx, id)
	})
}

func (s *Service) download(ctx context.Context, id string) (_ []byte, err error) {
	defer prefixErr(&err)
	var code []byte
	err = storage.Reserving(ctx, 1, func(ld *storage.Loader) error {
		return s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			if _, err := s.visible(ctx, tx, live, id); err != nil {
				return err
			}
			var err error
			code, err = ld.Get(tx, codeKey(id))
			if isNotFound(err) {
				return notFound(fmt.Sprintf("code of policy %q (never uploaded)", id))
			}
			return err
		})
	})
	return code, err
}

// Delete deletes a policy, its code and its set memberships, in one
// transaction; a policy of more than Limits().MaxMemberSets sets is
// keel.KindTooLarge and stays.
func (s *Service) Delete(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "policy.Delete", id, nil, func(ctx context.Context) error {
		return s.doDelete(ctx, id)
	})
}

func (s *Service) doDelete(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visible(ctx, tx, live, id)
		if err != nil {
			return err
		}
		if err := s.leaveAll(tx, id, SetPolicies); err != nil {
			return err
		}
		if err := tx.Delete(codeKey(id)); err != nil && !isNotFound(err) {
			return err
		}
		if err := tx.Delete(nameIx(rec.Org) + fold(rec.Name)); err != nil {
			return err
		}
		if err := addCount(tx, rec.Org, -1); err != nil {
			return err
		}
		return tx.Delete(polKey(id))
	})
}

// joinSets makes the new policy rec a member of the sets ids (each of its
// organization and kind, "PolicySetIDs[<i>]"), all or none; a set given
// twice is joined once. More sets than Limits().MaxMemberSets, or a set
// that would grow past Limits().MaxSetMembers, is keel.KindTooLarge.
func (s *Service) joinSets(tx storage.Tx, rec *record, ids []string) error {
	seen := map[string]bool{}
	var sets []*setRecord
	var v keel.Validation
	for i, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		field := fmt.Sprintf("PolicySetIDs[%d]", i)
		ps, err := getSet(tx, id)
		switch {
		case errors.Is(err, keel.KindNotFound) || err == nil && ps.Org != rec.Org:
			v.Add(field, "no policy set %q in %q", id, rec.Org)
		case err != nil:
			return err
		case ps.kind() != rec.Kind:
			v.Add(field, "policy set %q is of kind %s, the policy of kind %s", id, ps.kind(), rec.Kind)
		default:
			sets = append(sets, ps)
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	if most := s.maxMemberSets(); len(sets) > most {
		return s.tooLarge("policy sets of a policy", len(sets), most)
	}
	most := s.maxSetMembers()
	for _, ps := range sets {
		c, err := counts(tx, ps)
		if err != nil {
			return err
		}
		if c.total() >= most {
			return s.tooLarge(fmt.Sprintf("members of policy set %q", ps.ID), c.total()+1, most)
		}
		*c.slots()[SetPolicies]++
		if err := join(tx, SetPolicies, ps.ID, rec.ID); err != nil {
			return err
		}
		if err := putSet(tx, ps); err != nil {
			return err
		}
	}
	return nil
}
