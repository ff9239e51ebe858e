package ldapengine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

// revoker is the lease.Revoker, and lease.Renewer, that New registers for
// the engine's mount. It is a type of its own, not the Engine, so that the
// Engine exports no method that ends a secret without asking for a right:
// only the lease manager, which checks its callers' rights, reaches it.
type revoker struct{ e *Engine }

// Revoke ends the secret behind a lease the engine issued. A lease of
// "MOUNT/creds/ROLE" runs the deletion LDIF kept with it; a lease of a
// library check-out checks the account in and gives it a new password,
// unless the account is no longer checked out under that lease. Revoke is
// idempotent.
func (r revoker) Revoke(ctx context.Context, l lease.Lease) (err error) {
	defer prefixErr(&err)
	kind, err := r.e.leaseKind(l)
	if err != nil {
		return lease.Permanent(err)
	}
	if kind == "creds" {
		return r.e.revokeCreds(ctx, l)
	}
	return r.e.revokeCheckOut(ctx, l)
}

// Renew is asked by the lease manager before it renews a lease of the
// engine. The lease of a dynamic credential is always renewed (the role is
// not read again). The lease of a library check-out is renewed only while
// its account is checked out under it, with no check-in under way, as
// Vault's engine refuses the renewal of a check-out whose account is
// checked in: otherwise Renew fails with an error of kind keel.KindInvalid
// on the field "LeaseID", and the lease is left as it was.
func (r revoker) Renew(ctx context.Context, l lease.Lease, _ time.Duration) (err error) {
	defer prefixErr(&err)
	kind, err := r.e.leaseKind(l)
	if err != nil {
		return err
	}
	if kind == "creds" {
		return nil
	}
	return r.e.renewCheckOut(ctx, l)
}

// leaseKind returns "creds" or "library" for a lease of the engine's
// dynamic credentials or library check-outs, and an error of kind
// keel.KindInvalid for any other lease.
func (e *Engine) leaseKind(l lease.Lease) (string, error) {
	rest, ok := strings.CutPrefix(l.Path, e.mount+"/")
	if !ok {
		return "", fmt.Errorf("ldapengine: lease %q is not of mount %q: %w", l.ID, e.mount, keel.KindInvalid)
	}
	switch {
	case strings.HasPrefix(rest, "creds/"):
		return "creds", nil
	case strings.HasPrefix(rest, "library/"):
		return "library", nil
	}
	return "", fmt.Errorf("ldapengine: lease %q: no secret of this engine has path %q: %w", l.ID, l.Path, keel.KindInvalid)
}

// errNoLeases is returned by the operations that issue leases when
// Options.Leases is nil.
var errNoLeases = fmt.Errorf("ldapengine: no lease manager (Options.Leases): %w", keel.KindUnavailable)
