package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// Enforcement levels (modes) of a policy.
const (
	HardMandatory = "hard-mandatory" // the default
	SoftMandatory = "soft-mandatory"
	Advisory      = "advisory"
	Mandatory     = "mandatory" // the level of an OPA policy that must pass
)

// Kinds of policy.
const (
	Sentinel = "sentinel" // the default
	OPA      = "opa"
)

// Limits.
const (
	MaxCodeSize = 10 << 20 // bytes of uploaded code, at most (10 MiB)
	// defaultPageSize is the Limit of a page of a list when the request
	// gives none (0 or less).
	defaultPageSize = 20
	// MaxPageSize is the largest Limit of a page of a list: a larger one
	// is cut to it.
	MaxPageSize = 100
)

// Options configure a Service. The zero value (or nil) allows everything,
// uses the system clock and accepts every organization.
type Options struct {
	// Authorizer decides the caller's rights. Nil allows everything.
	Authorizer keel.Authorizer
	// Clock gives updated-at. Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Organizations is the catalog of the organizations the policies
	// belong to. New registers the Service with it
	// (project.Catalog.Register): every operation then checks, in its own
	// transaction, that the organization exists, and deleting an
	// organization in the catalog deletes its policies and policy sets.
	// Nil: every organization exists, and nothing deletes an
	// organization's policies.
	Organizations *project.Catalog
	// Observer is told of every operation (see keel.Observer). Nil:
	// none.
	Observer keel.Observer
}

// Service keeps policies and policy sets in a storage.Store. It is safe for
// concurrent use.
type Service struct {
	store storage.Store
	authz keel.Authorizer
	clock keel.Clock
	obs   keel.Observer
	reg   *project.Registration // nil without Options.Organizations
}

// ClaimKind is the kind of the part of a store a composition root lays
// out for policies (see storage.Claim): New refuses a view that would
// share keys with another component of the root.
const ClaimKind = "policy"

// New returns a Service that keeps its keys in store, as given: a store or
// a view its caller has scoped. Programs give it storage.Sub(root,
// "policy/") beside the catalog's storage.Sub(root, "project/"). New reads
// nothing from the store.
//
// New fails with an error of kind keel.KindInvalid when store is nil, and
// when Options.Organizations is set and store cannot be registered with it
// (project.Catalog.Register): store must be a view of the store under the
// catalog's view that overlaps neither it nor another registered view.
func New(store storage.Store, opts *Options) (_ *Service, err error) {
	defer prefixErr(&err)
	if store == nil {
		return nil, fmt.Errorf("policy: %w", keel.Invalid("Store", "is required"))
	}
	if err := storage.CheckClaim(store, ClaimKind); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Service{store: store, authz: o.Authorizer, clock: keel.ClockOrSystem(o.Clock), obs: o.Observer}
	if o.Organizations != nil {
		reg, err := o.Organizations.Register(store, s.purge)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		s.reg = reg
		reg.OnForget(s.forget)
	}
	return s, nil
}

// exists reads the catalog's organizations, workspaces and projects in
// the transaction of its caller (project.Orgs).
type exists interface {
	Exists(org string) (bool, error)
	WorkspaceOrg(id string) (string, error)
	ProjectOrg(id string) (string, error)
}

// anyOrg is the catalog of a Service without Options.Organizations: every
// organization exists, and no workspace or project is known.
type anyOrg struct{}

func (anyOrg) Exists(string) (_ bool, err error) {
	defer prefixErr(&err)
	return true, nil
}

func (anyOrg) WorkspaceOrg(id string) (_ string, err error) {
	defer prefixErr(&err)
	return "", notFound(fmt.Sprintf("workspace %q (no catalog)", id))
}

func (anyOrg) ProjectOrg(id string) (_ string, err error) {
	defer prefixErr(&err)
	return "", notFound(fmt.Sprintf("project %q (no catalog)", id))
}

// view runs fn in a View of the Service's store that also sees the
// catalog's organizations.
func (s *Service) view(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, live exists) error) error {
	if s.reg == nil {
		return s.store.View(ctx, func(ctx context.Context, tx storage.Tx) error { return fn(ctx, tx, anyOrg{}) })
	}
	return s.reg.View(ctx, func(ctx context.Context, tx storage.Tx, orgs project.Orgs) error {
		return fn(ctx, tx, orgs)
	})
}

// update runs fn in an Update of the Service's store that also sees the
// catalog's organizations: an organization whose deletion starts meanwhile
// makes it retry or fail, as any conflicting write does.
func (s *Service) update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, live exists) error) error {
	if s.reg == nil {
		return s.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return fn(ctx, tx, anyOrg{}) })
	}
	return s.reg.Update(ctx, func(ctx context.Context, tx storage.Tx, orgs project.Orgs) error {
		return fn(ctx, tx, orgs)
	})
}

// Enforce is the enforcement of a policy's one file.
type Enforce struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// Policy is a policy as read.
type Policy struct {
	ID   string
	Org  string
	Name string
	// Description is nil until set.
	Description *string
	Kind        string
	// Query is the OPA query; nil for Sentinel policies.
	Query *string
	// Enforce has exactly one element.
	Enforce []Enforce
	// EnforcementLevel is the level in force: the mode of Enforce[0].
	EnforcementLevel string
	// PolicySetIDs are the sets the policy is a member of, sorted.
	PolicySetIDs []string
	// UpdatedAt is nil until the first upload or update; UTC, to the
	// millisecond.
	UpdatedAt *time.Time
}

// record is a policy as stored; sets are edges.
type record struct {
	ID          string     `json:"id"`
	Org         string     `json:"org"`
	Name        string     `json:"name"`
	Description *string    `json:"description,omitempty"`
	Kind        string     `json:"kind"`
	Query       *string    `json:"query,omitempty"`
	Enforce     []Enforce  `json:"enforce"`
	UpdatedAt   *time.Time `json:"updated_at,omitempty"`
}

// Keys, relative to the Service's store (programs give it the view
// "policy/" of their store):
//
//	pol/<id>               the record of a policy (JSON)
//	code/<id>              the uploaded code
//	ix/<org>/<folded name> the id of the policy of that name
//	count/<org>            the number of policies of org (decimal)
//	set/<id>               the record of a policy set (JSON)
//	orgset/<org>/<set>     empty: set is a set of org
//	setname/<org>/<folded name> the id of the set of that name
//	setpol/<set>/<policy>  empty: policy is a member of set
//	polset/<policy>/<set>  empty: the same edge, seen from the policy
//	setws/<set>/<ws>, wsset/<ws>/<set>      set is attached to workspace ws
//	setprj/<set>/<prj>, prjset/<prj>/<set>  set is attached to project prj
//	setwsx/<set>/<ws>, wsxset/<ws>/<set>    set excludes workspace ws
//	v/setname              empty: every set has its orgset and setname keys (see indexSets)
//
// A set and its members are of one organization (Create, CreateSet and
// AddSetMembers refuse others): the edges of an organization are found
// from its sets.
func polKey(id string) string        { return "pol/" + id }
func codeKey(id string) string       { return "code/" + id }
func nameIx(org string) string       { return "ix/" + org + "/" }
func countKey(org string) string     { return "count/" + org }
func setKey(id string) string        { return "set/" + id }
func setNames(org string) string     { return "setname/" + org + "/" }
func orgSets(org string) string      { return "orgset/" + org + "/" }
func resource(org string) string     { return "organizations/" + org + "/policies" }
func fold(name string) string        { return strings.ToLower(name) }
func validID(id string) bool         { return id != "" && !strings.Contains(id, "/") }
func notFound(what string) error     { return fmt.Errorf("no %s: %w", what, keel.KindNotFound) }
func ms(t time.Time) time.Time       { return t.UTC().Truncate(time.Millisecond) }
func isNotFound(err error) bool      { return errors.Is(err, storage.ErrNotFound) }
func decode(raw []byte, v any) error { return json.Unmarshal(raw, v) }
func encode(v any) ([]byte, error)   { return json.Marshal(v) }
func validName(name string) bool     { return name != "" && strings.IndexFunc(name, notWord) < 0 }
func notWord(c rune) bool {
	return !(c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'))
}

// keysUnder returns the keys under prefix, without it, in order; never
// nil.
func keysUnder(tx storage.Tx, prefix string) ([]string, error) {
	keys := []string{}
	err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
		keys = append(keys, k[len(prefix):])
		return nil
	})
	return keys, err
}

// newID returns an id of HCP Terraform's form, as package project makes
// them: prefix, "-" and 16 random base58 characters.
func newID(prefix string) string { return prefix + "-" + randid.String(randid.Base58, 16) }

// allowed checks that the caller may manage the policies of org; a
// refusal is keel.KindNotFound. Whether org exists is checked in the
// transaction (orgExists).
func (s *Service) allowed(ctx context.Context, org string) error {
	if !validID(org) {
		return notFound(fmt.Sprintf("organization %q", org))
	}
	if err := keel.Authorize(ctx, s.authz, keel.CapManagePolicies, resource(org)); err != nil {
		if errors.Is(err, keel.KindForbidden) {
			return notFound(fmt.Sprintf("organization %q", org))
		}
		return err
	}
	return nil
}

// orgExists returns keel.KindNotFound, naming what, when org does not
// exist (or is being deleted).
func orgExists(live exists, org, what string) error {
	ok, err := live.Exists(org)
	if err != nil {
		return err
	}
	if !ok {
		return notFound(what)
	}
	return nil
}

func getRecord(tx storage.Tx, id string) (*record, error) {
	if !validID(id) {
		return nil, notFound(fmt.Sprintf("policy %q", id))
	}
	raw, err := tx.Get(polKey(id))
	if isNotFound(err) {
		return nil, notFound(fmt.Sprintf("policy %q", id))
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := decode(raw, &rec); err != nil || rec.ID != id {
		return nil, fmt.Errorf("record of policy %q is corrupt (%v): %w", id, err, keel.KindInternal)
	}
	return &rec, nil
}

func putRecord(tx storage.Tx, rec *record) error {
	raw, err := encode(rec)
	if err != nil {
		return fmt.Errorf("encode policy %q: %v: %w", rec.ID, err, keel.KindInternal)
	}
	return tx.Put(polKey(rec.ID), raw)
}

// visible returns the record of id, checking the caller's right on its
// organization and that the organization exists; a policy the caller may
// not manage, or of an organization being deleted, is not found.
func (s *Service) visible(ctx context.Context, tx storage.Tx, live exists, id string) (*record, error) {
	rec, err := getRecord(tx, id)
	if err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, s.authz, keel.CapManagePolicies, resource(rec.Org)); err != nil {
		if errors.Is(err, keel.KindForbidden) {
			return nil, notFound(fmt.Sprintf("policy %q", id))
		}
		return nil, err
	}
	if err := orgExists(live, rec.Org, fmt.Sprintf("policy %q", id)); err != nil {
		return nil, err
	}
	return rec, nil
}

func (s *Service) public(tx storage.Tx, rec *record) (Policy, error) {
	sets, err := keysUnder(tx, SetPolicies.memberSide(rec.ID))
	if err != nil {
		return Policy{}, err
	}
	return Policy{
		ID: rec.ID, Org: rec.Org, Name: rec.Name, Description: rec.Description,
		Kind: rec.Kind, Query: rec.Query, Enforce: append([]Enforce(nil), rec.Enforce...),
		EnforcementLevel: rec.Enforce[0].Mode, PolicySetIDs: sets, UpdatedAt: rec.UpdatedAt,
	}, nil
}

// addCount adds delta to the policy count of org.
func addCount(tx storage.Tx, org string, delta int) error {
	n, err := count(tx, org)
	if err != nil {
		return err
	}
	return tx.Put(countKey(org), []byte(strconv.Itoa(n+delta)))
}

// count returns the number of policies of org.
func count(tx storage.Tx, org string) (int, error) {
	raw, err := tx.Get(countKey(org))
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, fmt.Errorf("policy count of %q is corrupt (%v): %w", org, err, keel.KindInternal)
	}
	return n, nil
}
