package mount

import "github.com/keelhq/keel/internal/errprefix"

// errPrefix starts the message of every error of the package, once: the
// messages that add context to an error passed on (the store's, an
// engine's, the lease manager's, the Authorizer's) use errPrefix.Wrapf,
// and every exported function that returns an error defers errPrefix.Set.
const errPrefix errprefix.Prefix = "mount: "
