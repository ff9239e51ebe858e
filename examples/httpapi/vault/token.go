package vault

import (
	"net/http"
	"slices"
	"strings"

	"github.com/keelhq/keel"
)

// The headers a Vault-dialect request may carry its token in. RequestToken
// reads them in this order.
const (
	// HeaderSecretsToken is the token header of the service's document.
	HeaderSecretsToken = "X-Secrets-Token"
	// HeaderVaultToken is Vault's token header, which Vault's clients
	// (the vault CLI, vault/api, Vault Agent) send by default, with the
	// token of VAULT_TOKEN.
	HeaderVaultToken = "X-Vault-Token"
	// HeaderAuthorization carries the token as "Bearer <token>", which
	// Vault accepts too.
	HeaderAuthorization = "Authorization"
)

// RequestToken returns the token r carries in the Vault dialect, or ""
// when it carries none. One rule decides between headers: the first of
// X-Secrets-Token, X-Vault-Token and Authorization (with the scheme
// "Bearer", in any case, and the token after one space) that holds a token
// wins, and the others are not read, even when the winner holds a token
// nobody knows (an unknown token is refused, never replaced by another
// header's). An Authorization header of another scheme ("Basic …") holds
// no token of this dialect: it is passed over, as an absent header is.
//
// The adapter reads no token to authenticate: a program's middleware
// calls RequestToken, finds the token's principal and puts it in the
// request's context (keel.WithPrincipal) before the handler runs. The
// handler itself calls it only to answer auth/token/lookup-self's "id".
//
// RequestToken allocates nothing: the header names are in canonical form
// and looked up as they are. It is safe for concurrent use.
func RequestToken(r *http.Request) string {
	if v := r.Header[HeaderSecretsToken]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	if v := r.Header[HeaderVaultToken]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	if v := r.Header[HeaderAuthorization]; len(v) > 0 {
		scheme, tok, ok := strings.Cut(v[0], " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
	}
	return ""
}

// lookupSelf answers auth/token/lookup-self (GET, or POST and PUT as Vault
// accepts, the body ignored): the caller's token as Vault describes a
// token, from the principal in the request's context. keel's tokens are
// the program's, given at start: none expires, none is renewable, none has
// a use limit. A request without a principal (no token, or one the
// program does not know) answers 403 "permission denied", as Vault.
func lookupSelf(w http.ResponseWriter, r *http.Request) {
	p, ok := keel.PrincipalFrom(r.Context())
	if !ok || p.ID == "" {
		writeError(w, keel.KindUnauthenticated)
		return
	}
	policies := slices.Clone(p.Policies)
	if policies == nil {
		policies = []string{}
	}
	slices.Sort(policies)
	path := "auth/token/create"
	if slices.Contains(policies, keel.RootPolicy) {
		path = "auth/token/root"
	}
	var meta map[string]string
	if len(p.Meta) > 0 {
		meta = p.Meta
	}
	writeJSON(w, http.StatusOK, newResponse(mountToken, &tokenData{
		Accessor: p.ClientTokenID, DisplayName: p.DisplayName, EntityID: p.EntityID,
		ID: RequestToken(r), Meta: meta, Orphan: true, Path: path, Policies: policies, Type: "service",
	}))
}

// tokenData is the data of lookup-self: Vault's members, in the order of
// their names, as Vault (encoding/json from a map) writes them.
type tokenData struct {
	Accessor       string            `json:"accessor"`
	CreationTime   int64             `json:"creation_time"`
	CreationTTL    int64             `json:"creation_ttl"`
	DisplayName    string            `json:"display_name"`
	EntityID       string            `json:"entity_id"`
	ExpireTime     any               `json:"expire_time"`
	ExplicitMaxTTL int64             `json:"explicit_max_ttl"`
	ID             string            `json:"id"`
	Meta           map[string]string `json:"meta"`
	NumUses        int               `json:"num_uses"`
	Orphan         bool              `json:"orphan"`
	Path           string            `json:"path"`
	Policies       []string          `json:"policies"`
	Renewable      bool              `json:"renewable"`
	TTL            int64             `json:"ttl"`
	Type           string            `json:"type"`
}
