package passwordpolicy

import "github.com/keelhq/keel/internal/errprefix"

// errPrefix starts the message of every error of the package, once: every
// exported function that returns an error defers errPrefix.Set, so that
// the errors it passes on (the store's, the Authorizer's, the context's,
// keel.Invalid's) name the package too.
const errPrefix errprefix.Prefix = "passwordpolicy: "
