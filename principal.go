package keel

import "context"

// Principal is the caller of an operation: who it is and what it holds. A
// program puts it in the context with WithPrincipal; keel packages read it
// with PrincipalFrom and hand it to their Authorizer.
//
// The zero Principal is the anonymous caller.
type Principal struct {
	// ID identifies the caller in the program's own terms (a user name,
	// a token accessor). Empty for the anonymous caller.
	ID string
	// DisplayName is shown in generated names, such as the usernames of
	// dynamic directory credentials.
	DisplayName string
	// EntityID is the identity entity of the caller, when it has one; it
	// is recorded, for example, as the borrower of a checked-out account.
	EntityID string
	// ClientTokenID identifies the credential the caller presented; it is
	// recorded as the borrower token of a checked-out account.
	ClientTokenID string
	// Policies names the sets of rules that apply to the caller; a
	// RuleAuthorizer reads them. The policy "root" grants everything.
	Policies []string
	// Meta holds anything else the program wants to carry.
	Meta map[string]string
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx, and false with the
// anonymous principal when ctx carries none.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
