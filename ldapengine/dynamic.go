package ldapengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/credtemplate"
	"github.com/keelhq/keel/ldapengine/internal/ldifparse"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// defaultUsernameTemplate is the username template of a dynamic role that
// sets none.
const defaultUsernameTemplate = "v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}"

// prefixDynRole is the store prefix of dynamic roles.
const prefixDynRole = "dynrole/"

// DynamicRoleRequest creates or partially updates a dynamic role
// (PutDynamicRole). A nil field is left as it is (on create: empty or
// zero); a non-nil field is set, and an empty string or zero clears it.
// The LDIF fields are Go templates of LDIF (see Dynamic roles in the
// package documentation), as text or as standard base64 of it. The zero
// DynamicRoleRequest changes nothing on update, and fails on create
// (CreationLDIF and DeletionLDIF are required).
type DynamicRoleRequest struct {
	// CreationLDIF creates the account (CreateDynamicCred); required
	// after the merge.
	CreationLDIF *string
	// DeletionLDIF deletes it when its lease ends; required after the
	// merge.
	DeletionLDIF *string
	// RollbackLDIF undoes a creation that failed part way; optional.
	RollbackLDIF *string
	// UsernameTemplate is the Go template of the account's username.
	// Empty: "v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}".
	UsernameTemplate *string
	// DefaultTTL is the TTL of a credential's lease, at most MaxTTL and
	// the mount maximum (Options.MaxTTL). Zero: the lease manager's
	// default.
	DefaultTTL *time.Duration
	// MaxTTL caps the lease with its renewals, at most the mount maximum.
	// Zero: the mount maximum.
	MaxTTL *time.Duration
}

// DynamicRole is a dynamic role as GetDynamicRole returns it. LDIF fields
// are decoded text.
type DynamicRole struct {
	Name             string
	CreationLDIF     string
	DeletionLDIF     string
	RollbackLDIF     string
	UsernameTemplate string // as set; empty means "v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}"
	DefaultTTL       time.Duration
	MaxTTL           time.Duration
}

// DynamicCred is a dynamic credential (CreateDynamicCred): a directory
// account created for the caller, and the lease whose end deletes it.
type DynamicCred struct {
	Username           string
	Password           string   `keel:"secret"`
	DistinguishedNames []string // the DN of every creation_ldif entry, in order
	Lease              lease.Lease
}

type dynRoleRecord struct {
	CreationLDIF     string        `json:"creation_ldif"`
	DeletionLDIF     string        `json:"deletion_ldif"`
	RollbackLDIF     string        `json:"rollback_ldif,omitempty"`
	UsernameTemplate string        `json:"username_template,omitempty"`
	DefaultTTL       time.Duration `json:"default_ttl"`
	MaxTTL           time.Duration `json:"max_ttl"`
}

// credsLease is the data of the lease of a dynamic credential.
type credsLease struct {
	Role         string   `json:"role"`
	Username     string   `json:"username"`
	DNs          []string `json:"dns"`
	DeletionLDIF string   `json:"deletion_ldif"` // rendered
	// Added are the DNs of the creation's add records: the entries the
	// revocation must leave gone. Empty in the leases of older versions.
	Added []string              `json:"added,omitempty"`
	Data  credtemplate.LDIFData `json:"data"` // without the password
}

// mountMaxTTL is the mount's maximum TTL of dynamic credentials.
func (e *Engine) mountMaxTTL() time.Duration {
	if e.maxTTL > 0 {
		return e.maxTTL
	}
	return lease.DefaultTTL
}

// sampleData returns the sample fields used to check templates at write.
func sampleData(name string, now time.Time) (credtemplate.UsernameData, credtemplate.LDIFData) {
	exp := now.Add(time.Hour)
	return credtemplate.UsernameData{DisplayName: "sample-display-name", RoleName: name},
		credtemplate.LDIFData{Username: "v_sample-display-name_" + name + "_AbCdEfGhIj_1700000000", Password: "Sample-Password-0123456789",
			DisplayName: "sample-display-name", RoleName: name,
			IssueTime: now.Format(time.RFC3339), IssueTimeSeconds: now.Unix(),
			ExpirationTime: exp.Format(time.RFC3339), ExpirationTimeSeconds: exp.Unix()}
}

// validateDynRole checks every rule of r, the role name, adding each
// problem to v.
func (e *Engine) validateDynRole(v *keel.Validation, name string, r *dynRoleRecord) {
	addAll := func(err error) {
		for _, fe := range keel.FieldErrors(err) {
			v.Add(fe.Field, "%s", fe.Rule)
		}
	}
	now := e.clock.Now().UTC()
	ud, ld := sampleData(name, now)
	if r.UsernameTemplate != "" {
		u, err := credtemplate.Render("UsernameTemplate", r.UsernameTemplate, credtemplate.Username, ud, now)
		if err != nil {
			addAll(err)
		} else if why := checkUsername(u); why != "" {
			v.Add("UsernameTemplate", "gives the username %q for sample data, which %s", u, why)
		}
	}
	for _, f := range []struct {
		field, text string
		required    bool
	}{{"CreationLDIF", r.CreationLDIF, true}, {"DeletionLDIF", r.DeletionLDIF, true}, {"RollbackLDIF", r.RollbackLDIF, false}} {
		if f.text == "" {
			if f.required {
				v.Add(f.field, "is required")
			}
			continue
		}
		if _, _, err := renderLDIF(f.field, f.text, ld, now); err != nil {
			addAll(err)
		}
	}
	limit := e.mountMaxTTL()
	if r.DefaultTTL < 0 {
		v.Add("DefaultTTL", "must not be negative")
	} else if r.DefaultTTL > limit {
		v.Add("DefaultTTL", "must not exceed the mount maximum of %s", limit)
	}
	if r.MaxTTL < 0 {
		v.Add("MaxTTL", "must not be negative")
	} else if r.MaxTTL > limit {
		v.Add("MaxTTL", "must not exceed the mount maximum of %s", limit)
	}
	if r.MaxTTL > 0 && r.DefaultTTL > r.MaxTTL {
		v.Add("DefaultTTL", "must not exceed the maximum TTL")
	}
}

// checkUsername returns why a generated username cannot be used, or "".
func checkUsername(u string) string {
	if u == "" {
		return "is empty"
	}
	if len(u) > credtemplate.MaxUsernameLen {
		return fmt.Sprintf("is longer than %d bytes", credtemplate.MaxUsernameLen)
	}
	return credtemplate.CheckFieldValue(u)
}

// renderLDIF renders the LDIF template text of field with d and parses
// the result.
func renderLDIF(field, text string, d credtemplate.LDIFData, now time.Time) (string, []Change, error) {
	out, err := credtemplate.Render(field, text, credtemplate.LDIF, d, now)
	if err != nil {
		return "", nil, err
	}
	changes, err := ldifparse.Parse(field, out)
	if err != nil {
		return "", nil, err
	}
	return out, changes, nil
}

// PutDynamicRole creates the dynamic role name, or updates the fields of
// r that are not nil. It needs create or update (decided in the
// transaction) on "MOUNT/role/NAME". The merged role is checked as a
// whole: CreationLDIF and DeletionLDIF are required; each LDIF field and
// the username template must render with sample data, and the LDIF must
// parse (errors name the entry and line); DefaultTTL and MaxTTL must not
// be negative nor exceed the mount maximum, and DefaultTTL not MaxTTL.
// Every broken rule is reported at once (keel.KindInvalid), and then
// nothing is stored.
func (e *Engine) PutDynamicRole(ctx context.Context, name string, r DynamicRoleRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.PutDynamicRole", name, r, func(ctx context.Context) error {
		return e.putDynamicRole(ctx, name, r)
	})
}

func (e *Engine) putDynamicRole(ctx context.Context, name string, r DynamicRoleRequest) (err error) {
	defer prefixErr(&err)
	if err := checkNewName(dynamicRoleName, name); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec dynRoleRecord
		found, err := getJSON(tx, prefixDynRole+name, &rec)
		if err != nil {
			return err
		}
		c := keel.CapUpdate
		if !found {
			c = keel.CapCreate
		}
		if err := keel.Authorize(ctx, e.auth, c, e.resource("role", name)); err != nil {
			return err
		}
		set := func(dst *string, src *string, decode bool) {
			if src != nil {
				*dst = *src
				if decode {
					*dst = ldifparse.DecodeField(*src)
				}
			}
		}
		set(&rec.CreationLDIF, r.CreationLDIF, true)
		set(&rec.DeletionLDIF, r.DeletionLDIF, true)
		set(&rec.RollbackLDIF, r.RollbackLDIF, true)
		set(&rec.UsernameTemplate, r.UsernameTemplate, false)
		if r.DefaultTTL != nil {
			rec.DefaultTTL = *r.DefaultTTL
		}
		if r.MaxTTL != nil {
			rec.MaxTTL = *r.MaxTTL
		}
		var v keel.Validation
		e.validateDynRole(&v, name, &rec)
		if err := validation(&v); err != nil {
			return err
		}
		return putJSON(tx, prefixDynRole+name, &rec)
	})
}

func (e *Engine) loadDynRole(ctx context.Context, name string) (dynRoleRecord, error) {
	var rec dynRoleRecord
	var found bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		found, err = getJSON(tx, prefixDynRole+name, &rec)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("ldapengine: dynamic role %q: %w", name, keel.KindNotFound)
	}
	return rec, err
}

// GetDynamicRole returns the dynamic role name; a missing role is an
// error of kind keel.KindNotFound. It needs read on "MOUNT/role/NAME".
func (e *Engine) GetDynamicRole(ctx context.Context, name string) (_ DynamicRole, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetDynamicRole", name, nil, func(ctx context.Context) (DynamicRole, error) {
		return e.getDynamicRole(ctx, name)
	})
}

func (e *Engine) getDynamicRole(ctx context.Context, name string) (_ DynamicRole, err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return DynamicRole{}, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("role", name)); err != nil {
		return DynamicRole{}, err
	}
	rec, err := e.loadDynRole(ctx, name)
	if err != nil {
		return DynamicRole{}, err
	}
	return DynamicRole{Name: name, CreationLDIF: rec.CreationLDIF, DeletionLDIF: rec.DeletionLDIF,
		RollbackLDIF: rec.RollbackLDIF, UsernameTemplate: rec.UsernameTemplate,
		DefaultTTL: rec.DefaultTTL, MaxTTL: rec.MaxTTL}, nil
}

// ListDynamicRoles returns one page of the names directly under path
// among the dynamic roles, with folders ending in "/", paged as
// ListStaticRoles (r.Limit 0: 1,000). It needs list on
// "MOUNT/role/PATH".
func (e *Engine) ListDynamicRoles(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.ListDynamicRoles", "", map[string]any{"path": path, "r": r}, func(ctx context.Context) (keel.Page[string], error) {
		return e.listDynamicRoles(ctx, path, r)
	})
}

func (e *Engine) listDynamicRoles(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	return e.listChildren(ctx, e.resource("role"), prefixDynRole, path, r)
}

// DeleteDynamicRole removes the dynamic role name; a missing role is not
// an error. The leases of its credentials stay, and their revocation still
// deletes the accounts. It needs delete on "MOUNT/role/NAME".
func (e *Engine) DeleteDynamicRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.DeleteDynamicRole", name, nil, func(ctx context.Context) error {
		return e.deleteDynamicRole(ctx, name)
	})
}

func (e *Engine) deleteDynamicRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapDelete, e.resource("role", name)); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Delete(prefixDynRole + name)
	})
}

// CreateDynamicCred creates a directory account from the dynamic role
// name and returns its credential with a lease of path "MOUNT/creds/NAME"
// (TTL the role's DefaultTTL, capped at its MaxTTL and the mount maximum;
// renewable): each call makes a new account, with a username and lease id
// the engine chooses. It needs read on "MOUNT/creds/NAME" (Vault reads
// creds/NAME to get one), and FlavorLDAP (FlavorOpenLDAP:
// keel.KindInvalid). Without Options.Leases it fails with
// keel.KindUnavailable; a missing role or configuration is
// keel.KindNotFound.
//
// The username comes from the role's username template (.DisplayName is
// the caller's keel.Principal.DisplayName), the password from the
// configuration's password policy or length. The creation LDIF entries run
// in order; at the first failure the rest are skipped, the rollback LDIF
// (when set) runs all its entries, and every error is returned together
// (github.com/hashicorp/go-multierror); no lease is issued. Revoking or
// expiring the lease runs the deletion LDIF rendered now.
func (e *Engine) CreateDynamicCred(ctx context.Context, name string) (_ DynamicCred, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.CreateDynamicCred", name, nil, func(ctx context.Context) (DynamicCred, error) {
		return e.createDynamicCred(ctx, name)
	})
}

func (e *Engine) createDynamicCred(ctx context.Context, name string) (_ DynamicCred, err error) {
	defer prefixErr(&err)
	if !e.feat.dynamicCreds {
		return DynamicCred{}, invalid("", "dynamic credentials (creds) are offered by the ldap engine only, not by %s", e.flavor)
	}
	if err := checkRoleName(name); err != nil {
		return DynamicCred{}, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("creds", name)); err != nil {
		return DynamicCred{}, err
	}
	if e.leases == nil {
		return DynamicCred{}, errNoLeases
	}
	rec, err := e.loadDynRole(ctx, name)
	if err != nil {
		return DynamicCred{}, err
	}
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return DynamicCred{}, err
	}
	p, _ := keel.PrincipalFrom(ctx)
	if why := credtemplate.CheckFieldValue(p.DisplayName); why != "" {
		return DynamicCred{}, invalid("", "the caller's display name %s", why)
	}
	now := e.clock.Now().UTC()
	ut := rec.UsernameTemplate
	if ut == "" {
		ut = defaultUsernameTemplate
	}
	username, err := credtemplate.Render("UsernameTemplate", ut, credtemplate.Username, credtemplate.UsernameData{DisplayName: p.DisplayName, RoleName: name}, now)
	if err != nil {
		return DynamicCred{}, wrapf(err, "dynamic role %q", name)
	}
	if why := checkUsername(username); why != "" {
		return DynamicCred{}, invalid("", "the role's username template gives the username %q, which %s", username, why)
	}
	password, err := e.generate(ctx, &cfg)
	if err != nil {
		return DynamicCred{}, wrapf(err, "dynamic role %q", name)
	}
	if why := credtemplate.CheckPassword(password); why != "" {
		return DynamicCred{}, invalid("", "the password generated by the configuration's password policy %s", why)
	}
	ttl, maxTTL := e.credsTTL(&rec)
	exp := now.Add(ttl)
	data := credtemplate.LDIFData{Username: username, Password: password, DisplayName: p.DisplayName, RoleName: name,
		IssueTime: now.Format(time.RFC3339), IssueTimeSeconds: now.Unix(),
		ExpirationTime: exp.Format(time.RFC3339), ExpirationTimeSeconds: exp.Unix()}
	_, creation, err := renderLDIF("CreationLDIF", rec.CreationLDIF, data, now)
	if err != nil {
		return DynamicCred{}, wrapf(err, "dynamic role %q", name)
	}
	deletionText, deletion, err := renderLDIF("DeletionLDIF", rec.DeletionLDIF, data, now)
	if err != nil {
		return DynamicCred{}, wrapf(err, "dynamic role %q", name)
	}
	var rollback []Change
	if rec.RollbackLDIF != "" {
		if _, rollback, err = renderLDIF("RollbackLDIF", rec.RollbackLDIF, data, now); err != nil {
			return DynamicCred{}, wrapf(err, "dynamic role %q", name)
		}
	}
	// A full lease-count quota refuses before the account exists.
	if err := e.leases.CheckQuota(ctx, e.resource("creds", name)); err != nil {
		return DynamicCred{}, wrapf(err, "dynamic role %q", name)
	}
	conn := cfg.conn()
	added := addedDNs(creation)
	if err := e.dir.Apply(ctx, conn, creation, false); err != nil {
		merr := multierror.Append(&multierror.Error{ErrorFormat: listFormat}, wrapf(err, "dynamic role %q: creating the account", name))
		if rollback != nil {
			if rerr := e.applyAll(ctx, conn, rollback); rerr != nil {
				merr = multierror.Append(merr, wrapf(rerr, "dynamic role %q: rolling back", name))
			} else if gerr := e.checkGone(ctx, conn, "RollbackLDIF", added); gerr != nil {
				merr = multierror.Append(merr, wrapf(gerr, "dynamic role %q: rolling back", name))
			}
		}
		e.log.Warn("dynamic credential creation failed", "role", name, "error", merr)
		return DynamicCred{}, merr
	}
	dns := make([]string, len(creation))
	for i, c := range creation {
		dns[i] = c.DN
	}
	ld := data
	ld.Password = ""
	raw, err := json.Marshal(credsLease{Role: name, Username: username, DNs: dns, DeletionLDIF: deletionText, Data: ld, Added: added})
	if err == nil {
		var l lease.Lease
		l, err = e.leases.Issue(ctx, lease.IssueRequest{Path: e.resource("creds", name), TTL: rec.DefaultTTL, MaxTTL: maxTTL, Renewable: true, Data: raw})
		if err == nil {
			return DynamicCred{Username: username, Password: password, DistinguishedNames: dns, Lease: l}, nil
		}
	}
	merr := multierror.Append(&multierror.Error{ErrorFormat: listFormat}, wrapf(err, "dynamic role %q: issuing the lease", name))
	if derr := e.applyAll(context.WithoutCancel(ctx), conn, deletion); derr != nil {
		merr = multierror.Append(merr, wrapf(derr, "dynamic role %q: deleting the account again", name))
	} else if gerr := e.checkGone(context.WithoutCancel(ctx), conn, "DeletionLDIF", added); gerr != nil {
		merr = multierror.Append(merr, wrapf(gerr, "dynamic role %q: deleting the account again", name))
	}
	return DynamicCred{}, merr
}

// credsTTL returns the TTL that .ExpirationTime assumes and the max TTL
// asked of the lease manager (zero: the manager's mount maximum).
func (e *Engine) credsTTL(rec *dynRoleRecord) (ttl, maxTTL time.Duration) {
	maxTTL = rec.MaxTTL
	if e.maxTTL > 0 && (maxTTL == 0 || maxTTL > e.maxTTL) {
		maxTTL = e.maxTTL
	}
	ttl = rec.DefaultTTL
	if ttl == 0 {
		ttl = lease.DefaultTTL
	}
	if maxTTL > 0 {
		ttl = min(ttl, maxTTL)
	}
	return min(ttl, e.mountMaxTTL()), maxTTL
}

// applyAll runs every change, and returns the errors of those that failed
// for another reason than a missing entry or attribute value (already
// done).
func (e *Engine) applyAll(ctx context.Context, c Conn, changes []Change) error {
	err := e.dir.Apply(ctx, c, changes, true)
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var keep []error
	for _, x := range j.Unwrap() {
		var ce *ChangeError
		if errors.As(x, &ce) && errors.Is(ce.Err, keel.KindNotFound) {
			continue
		}
		keep = append(keep, x)
	}
	return join(keep...)
}

// revokeCreds runs the deletion LDIF kept in the lease of a dynamic
// credential, then checks that every entry the creation added is gone.
// Entries already gone count as deleted, so it is idempotent; any other
// failure is returned for the lease manager to retry.
//
// A deletion LDIF that leaves an added entry (it names another entry: a
// role misconfigured) does not revoke: the account would stay live with
// no lease. The role's current deletion LDIF, rendered with the lease's
// data, is tried then, so that once an operator fixes the role the next
// attempt removes the account; until then the revocation fails with an
// error of kind keel.KindInvalid on "DeletionLDIF" naming the entry, and
// the lease stays, retried and in the end irrevocable, as Vault keeps it.
func (e *Engine) revokeCreds(ctx context.Context, l lease.Lease) error {
	var d credsLease
	if err := json.Unmarshal(l.Data, &d); err != nil || d.DeletionLDIF == "" {
		return lease.Permanent(fmt.Errorf("ldapengine: lease %q: no deletion LDIF in its data: %w", l.ID, keel.KindInternal))
	}
	changes, err := ldifparse.Parse("DeletionLDIF", d.DeletionLDIF)
	if err != nil {
		return lease.Permanent(wrapf(err, "lease %q", l.ID))
	}
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return wrapf(err, "lease %q", l.ID)
	}
	conn := cfg.conn()
	if err := e.applyAll(ctx, conn, changes); err != nil {
		return wrapf(err, "lease %q: deleting the account of dynamic role %q", l.ID, d.Role)
	}
	gone := e.checkGone(ctx, conn, "DeletionLDIF", d.Added)
	if keel.KindOf(gone) == keel.KindInvalid {
		// The LDIF kept in the lease left the account: try the role's
		// deletion LDIF as it is now.
		if rec, err := e.loadDynRole(ctx, d.Role); err == nil && rec.DeletionLDIF != "" {
			data := d.Data
			data.Username = d.Username
			if _, current, err := renderLDIF("DeletionLDIF", rec.DeletionLDIF, data, e.clock.Now().UTC()); err == nil {
				if err := e.applyAll(ctx, conn, current); err != nil {
					return wrapf(err, "lease %q: deleting the account of dynamic role %q", l.ID, d.Role)
				}
				gone = e.checkGone(ctx, conn, "DeletionLDIF", d.Added)
			}
		}
	}
	if gone != nil {
		return wrapf(gone, "lease %q: dynamic role %q", l.ID, d.Role)
	}
	e.log.Info("dynamic credential revoked", "role", d.Role, "username", d.Username)
	return nil
}

// addedDNs returns the DNs of the add records of changes.
func addedDNs(changes []Change) []string {
	var out []string
	for _, c := range changes {
		if c.Type == ChangeAdd {
			out = append(out, c.DN)
		}
	}
	return out
}

// checkGone fails when an entry of dns is still in the directory after the
// LDIF of field ran: with an error of kind keel.KindInvalid on field naming
// it, or with the directory's error when it cannot tell.
func (e *Engine) checkGone(ctx context.Context, c Conn, field string, dns []string) error {
	for _, dn := range dns {
		err := e.dir.EntryExists(ctx, c, dn)
		switch {
		case err == nil:
			return invalid(field, "left the entry %q in the directory, which the creation added: the account is still live until the role's LDIF deletes it", dn)
		case !errors.Is(err, keel.KindNotFound):
			return wrapf(err, "checking that %q is gone", dn)
		}
	}
	return nil
}
