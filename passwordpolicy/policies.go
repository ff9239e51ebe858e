package passwordpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

var policyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidName reports whether name is a valid policy name: 1 to 128 letters,
// digits, '_', '.' or '-', starting with a letter or a digit.
func ValidName(name string) bool { return policyName.MatchString(name) }

// Options configure Policies. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Authorizer decides the caller's rights on each operation (resource
	// "sys/policies/password/NAME"). Nil allows everything.
	Authorizer keel.Authorizer
	// Observer is told of every operation (see keel.Observer). Nil:
	// none.
	Observer keel.Observer
}

// Policies stores password policies by name: Vault's
// sys/policies/password/:name. Create one with New; its zero value is not
// usable. It is safe for concurrent use.
type Policies struct {
	store storage.Store
	auth  keel.Authorizer
	obs   keel.Observer
}

// generated is the Output of a password generation an Observer is told of.
type generated struct {
	Password string `keel:"secret"`
}

// New returns the policies kept in store, which its caller has scoped to
// them (package mount gives it the view "ldapengine/password-policies/" of
// its store): each policy is the key NAME, holding the JSON object
// {"policy": TEXT}. A nil store is an error of kind keel.KindInvalid (field
// "Store").
func New(store storage.Store, opts *Options) (_ *Policies, err error) {
	defer errPrefix.Set(&err)
	if store == nil {
		return nil, keel.Invalid("Store", "is required")
	}
	if err := storage.CheckClaim(store, ClaimKind); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Policies{store: store, auth: o.Authorizer, obs: o.Observer}, nil
}

// ClaimKind is the kind of the part of a store a composition root lays
// out for password policies (see storage.Claim): New refuses a view that
// would share keys with another component of the root.
const ClaimKind = "passwordpolicy"

type storedPolicy struct {
	Policy string `json:"policy"`
}

func checkName(name string) error {
	if !ValidName(name) {
		return keel.Invalid("Name", "must be 1 to 128 letters, digits, '_', '.', '-', starting with a letter or digit")
	}
	return nil
}

// Put creates or replaces the policy name with the text policy, which must
// parse (Parse). It needs update on "sys/policies/password/NAME". An
// invalid name or policy is an error of kind keel.KindInvalid (field "Name"
// or "Policy").
func (p *Policies) Put(ctx context.Context, name, policy string) error {
	return keel.ObserveErr(ctx, p.obs, nil, "passwordpolicy.Put", name, policy, func(ctx context.Context) error {
		return p.put(ctx, name, policy)
	})
}

func (p *Policies) put(ctx context.Context, name, policy string) (err error) {
	defer errPrefix.Set(&err)
	if err := checkName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapUpdate, "sys/policies/password/"+name); err != nil {
		return err
	}
	if _, err := Parse(policy); err != nil {
		return err
	}
	raw, _ := json.Marshal(storedPolicy{Policy: policy})
	return p.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put(name, raw)
	})
}

// Get returns the text of the policy name. It needs read on
// "sys/policies/password/NAME". A missing policy is an error of kind
// keel.KindNotFound.
func (p *Policies) Get(ctx context.Context, name string) (string, error) {
	return keel.Observe(ctx, p.obs, nil, "passwordpolicy.Get", name, nil, func(ctx context.Context) (string, error) {
		return p.doGet(ctx, name)
	})
}

func (p *Policies) doGet(ctx context.Context, name string) (_ string, err error) {
	defer errPrefix.Set(&err)
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapRead, "sys/policies/password/"+name); err != nil {
		return "", err
	}
	return p.get(ctx, name)
}

func (p *Policies) get(ctx context.Context, name string) (string, error) {
	var raw []byte
	err := p.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		raw, err = tx.Get(name)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("passwordpolicy: password policy %q: %w", name, keel.KindNotFound)
	}
	if err != nil {
		return "", err
	}
	var sp storedPolicy
	if err := json.Unmarshal(raw, &sp); err != nil {
		return "", fmt.Errorf("passwordpolicy: password policy %q: stored record: %v: %w", name, err, keel.KindInternal)
	}
	return sp.Policy, nil
}

// Delete removes the policy name; a missing policy is not an error. It
// needs delete on "sys/policies/password/NAME".
func (p *Policies) Delete(ctx context.Context, name string) error {
	return keel.ObserveErr(ctx, p.obs, nil, "passwordpolicy.Delete", name, nil, func(ctx context.Context) error {
		return p.doDelete(ctx, name)
	})
}

func (p *Policies) doDelete(ctx context.Context, name string) (err error) {
	defer errPrefix.Set(&err)
	if err := checkName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapDelete, "sys/policies/password/"+name); err != nil {
		return err
	}
	return p.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(name)
	})
}

// defaultListLimit is how many names a page of List holds when the request
// asks for no limit (ListRequest.Limit of 0 or less).
const defaultListLimit = 1000

// List returns one page of the names of the policies, sorted: the names
// after r.Cursor (empty: from the first), at most r.Limit of them
// (1,000 when r.Limit is 0 or less). Next is the cursor of the
// following page, empty on the last; a page past the end is empty, as is
// the list of a store that holds no policy. The cursor is the last name
// given, so a walk (keel.All) goes on after it while policies come and
// go. It needs list on "sys/policies/password/".
func (p *Policies) List(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
	return keel.Observe(ctx, p.obs, nil, "passwordpolicy.List", "", r, func(ctx context.Context) (keel.Page[string], error) {
		return p.doList(ctx, r)
	})
}

func (p *Policies) doList(ctx context.Context, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer errPrefix.Set(&err)
	if err := keel.Authorize(ctx, p.auth, keel.CapList, "sys/policies/password/"); err != nil {
		return keel.Page[string]{}, err
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var names []string
	err = p.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		names = names[:0]
		// One more than the page, to know whether another follows.
		return tx.Scan("", storage.ScanOptions{After: r.Cursor, KeysOnly: true}, func(key string, _ []byte) error {
			if len(names) == limit+1 {
				return storage.StopScan
			}
			names = append(names, key)
			return nil
		})
	})
	if err != nil {
		return keel.Page[string]{}, err
	}
	if len(names) > limit {
		return keel.Page[string]{Items: names[:limit], Next: names[limit-1]}, nil
	}
	return keel.Page[string]{Items: names}, nil
}

// Generate returns a password from the policy name (Vault's
// sys/policies/password/:name/generate). It needs read on
// "sys/policies/password/NAME/generate". A missing policy is an error of
// kind keel.KindNotFound.
func (p *Policies) Generate(ctx context.Context, name string) (string, error) {
	ctx, op, err := keel.Begin(ctx, p.obs, nil, "passwordpolicy.Generate", name, nil)
	if err != nil {
		var zero string
		return zero, err
	}
	out, err := p.generate(ctx, name)
	if op != nil {
		op.End(generated{out}, err)
	}
	return out, err
}

func (p *Policies) generate(ctx context.Context, name string) (_ string, err error) {
	defer errPrefix.Set(&err)
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := keel.Authorize(ctx, p.auth, keel.CapRead, "sys/policies/password/"+name+"/generate"); err != nil {
		return "", err
	}
	return p.generateUnchecked(ctx, name)
}

// GenerateUnchecked is Generate without the rights check: it asks the
// Authorizer nothing and ignores the caller in ctx. It is for engines that
// generate a password on their own account (a rotation, a check-in, a
// dynamic credential) from the policy their configuration names, after
// checking the caller's right on their own operation; never call it on a
// caller's request for a password. A missing policy is an error of kind
// keel.KindNotFound; a stored text that no longer parses is of kind
// keel.KindInvalid.
func (p *Policies) GenerateUnchecked(ctx context.Context, name string) (string, error) {
	ctx, op, err := keel.Begin(ctx, p.obs, nil, "passwordpolicy.GenerateUnchecked", name, nil)
	if err != nil {
		var zero string
		return zero, err
	}
	out, err := p.generateUnchecked(ctx, name)
	if op != nil {
		op.End(generated{out}, err)
	}
	return out, err
}

func (p *Policies) generateUnchecked(ctx context.Context, name string) (_ string, err error) {
	defer errPrefix.Set(&err)
	text, err := p.get(ctx, name)
	if err != nil {
		return "", err
	}
	pol, err := Parse(text)
	if err != nil {
		return "", errPrefix.Wrapf(err, "password policy %q", name)
	}
	return pol.Generate()
}
