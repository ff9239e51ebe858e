package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/internal/randid"
)

// The headers a token may come in (see requestToken for their order).
const (
	headerSecretsToken = vault.HeaderSecretsToken  // Vault-style API, the spec's name
	headerVaultToken   = vault.HeaderVaultToken    // Vault-style API, Vault's clients' name
	headerAuthz        = vault.HeaderAuthorization // "Bearer <token>": TFE-style API, and Vault's too
	headerClusterToken = "X-Cluster-Token"         // Consul-style API
)

// tokenTable maps tokens to the principals they authenticate. It keeps only
// the SHA-256 digest of each token: a lookup hashes the presented token and
// finds the digest in a map, so that the time it takes tells nothing about
// how much of a token matched, and the table itself holds no token in
// clear.
//
// A tokenTable is filled before the server starts and only read afterwards.
type tokenTable struct {
	byDigest map[[sha256.Size]byte]keel.Principal
}

func newTokenTable() *tokenTable {
	return &tokenTable{byDigest: make(map[[sha256.Size]byte]keel.Principal)}
}

// add records that token authenticates p, and sets p.ClientTokenID. It
// reports false, and records nothing, when the token is empty or already
// known.
func (t *tokenTable) add(token string, p keel.Principal) bool {
	return token != "" && t.addDigest(sha256.Sum256([]byte(token)), p)
}

// addDigest records that the token of SHA-256 digest sum authenticates p,
// and sets p.ClientTokenID. It reports false, and records nothing, when
// the digest is already known.
func (t *tokenTable) addDigest(sum [sha256.Size]byte, p keel.Principal) bool {
	if _, dup := t.byDigest[sum]; dup {
		return false
	}
	p.ClientTokenID = digestID(sum)
	t.byDigest[sum] = p
	return true
}

// lookup returns the principal of token, and false when the token is not
// known.
func (t *tokenTable) lookup(token string) (keel.Principal, bool) {
	if token == "" {
		return keel.Principal{}, false
	}
	p, ok := t.byDigest[sha256.Sum256([]byte(token))]
	if !ok {
		return keel.Principal{}, false
	}
	// Each request gets its own copy of the slice, so that no handler can
	// change the policies of the next request.
	p.Policies = slices.Clone(p.Policies)
	return p, true
}

// tokenID names a token without revealing it: the first 8 hex digits of its
// SHA-256. It becomes keel.Principal.ClientTokenID, which keel records (as
// the borrower of a checked-out account, for example) and logs may show.
func tokenID(token string) string { return digestID(sha256.Sum256([]byte(token))) }

// digestID is the tokenID of the token of SHA-256 digest sum.
func digestID(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:4]) }

// requestToken returns the token of r, or "" when it carries none. The
// first of these headers that holds a token wins, and the others are not
// read: X-Secrets-Token, X-Vault-Token, Authorization ("Bearer <token>";
// a header of another scheme holds none and is passed over, as an absent
// one), X-Cluster-Token. The first three are the Vault
// dialect's, in the order of vault.RequestToken, so that the token the
// server authenticates is the one the Vault adapter describes
// (auth/token/lookup-self).
func requestToken(r *http.Request) string {
	if tok := vault.RequestToken(r); tok != "" {
		return tok
	}
	if v := r.Header[headerClusterToken]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// authenticate puts the principal of the request's token in the request's
// context, where keel packages find it with keel.PrincipalFrom. A request
// with no token, or with a token the table does not know, goes on
// anonymous: whether an anonymous caller may do something is for the
// adapter and the authorizer to decide, and most of what they serve
// refuses it.
func authenticate(tokens *tokenTable, next http.Handler) http.Handler {
	return front(tokens, nil, nil, next)
}

// rootPrincipal is the principal of the root token.
func rootPrincipal() keel.Principal {
	return keel.Principal{ID: "root", DisplayName: "root", Policies: []string{keel.RootPolicy}}
}

// newRootToken returns "kr." and 24 random base62 characters (about 143
// bits).
func newRootToken() string {
	return string(randid.Append([]byte("kr."), randid.Base62, 24))
}
