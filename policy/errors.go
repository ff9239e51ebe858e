package policy

import "github.com/keelhq/keel/internal/errprefix"

// Error messages: every error the package returns starts with errPrefix,
// once, as every keel package's starts with its name. An error of the
// package's own that must carry it where it is made (a sentinel) starts
// with "policy: "; every other error, the package's and those of the
// store, the context, the Authorizer and the catalog that it passes on,
// gets it from prefixErr, which every exported function defers
// (TestErrorMessagesGuard checks it).
const errPrefix errprefix.Prefix = "policy: "

// prefixErr sets *err to errPrefix.Add(*err).
func prefixErr(err *error) { errPrefix.Set(err) }
