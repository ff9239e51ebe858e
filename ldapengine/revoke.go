package ldapengine

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

// Revoke ends the secret behind a lease the engine issued: it makes the
// Engine the lease.Revoker of its mount. A lease of "MOUNT/creds/ROLE"
// runs the deletion LDIF kept with it; a lease of a library check-out
// checks the account in and gives it a new password. Revoke is idempotent.
func (e *Engine) Revoke(ctx context.Context, l lease.Lease) error {
	rest, ok := strings.CutPrefix(l.Path, e.mount+"/")
	if !ok {
		return lease.Permanent(fmt.Errorf("ldapengine: lease %q is not of mount %q: %w", l.ID, e.mount, keel.ErrInvalid))
	}
	switch {
	case strings.HasPrefix(rest, "creds/"):
		return e.revokeCreds(ctx, l)
	case strings.HasPrefix(rest, "library/"):
		return e.revokeCheckOut(ctx, l)
	}
	return lease.Permanent(fmt.Errorf("ldapengine: lease %q: no secret of this engine has path %q: %w", l.ID, l.Path, keel.ErrInvalid))
}

// errNoLeases is returned by the operations that issue leases when
// Options.Leases is nil.
var errNoLeases = fmt.Errorf("ldapengine: no lease manager (Options.Leases): %w", keel.ErrUnavailable)
