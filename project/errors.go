package project

import "github.com/keelhq/keel/internal/errprefix"

// Error messages: every error the package returns starts with errPrefix,
// once, as every keel package's starts with its name. An error of the
// package's own that must carry it where it is made (a sentinel) starts
// with "project: "; every other error, the package's and those of the
// store, the context and the Authorizer that it passes on, gets it from
// prefixErr, which every exported function defers
// (TestErrorMessagesGuard checks it). The errors of the closure a
// Registration runs are the registered service's: they pass unchanged
// (passed).
const errPrefix errprefix.Prefix = "project: "

// prefixErr sets *err to errPrefix.Add(*err), but for an error passed on
// unchanged (passed: a Registration's closure's, a guarded store's), which
// it unwraps.
func prefixErr(err *error) {
	if p, ok := (*err).(*passed); ok {
		*err = p.err
		return
	}
	errPrefix.Set(err)
}

// pass returns err, an error of a registered service's closure, as a
// passed; nil stays nil.
func pass(err error) error {
	if err == nil {
		return nil
	}
	return &passed{err}
}

// passed carries an error of a registered service's closure through the
// Catalog's transaction, so that prefixErr leaves it unchanged.
type passed struct{ err error }

func (p *passed) Error() string { return p.err.Error() }
func (p *passed) Unwrap() error { return p.err }
