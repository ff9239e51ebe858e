package vault

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/ratelimit"
)

// Options configure a Handler. A nil *Options means defaults.
type Options struct {
	Clock  keel.Clock   // nil: the system clock
	Logger *slog.Logger // nil: discard
	// Server describes the program for sys/health, sys/seal-status and
	// sys/leader. The zero value: version "dev", no cluster.
	Server Server
	// Snapshots, when not nil, serves sys/storage/raft/snapshot (see
	// Snapshots). Nil: those paths are not served.
	Snapshots *Snapshots
	// RateLimits serves sys/quotas/rate-limit (see LimitRate). Nil: none.
	RateLimits *ratelimit.Limiter
}

// Handler serves the Vault-style API of a mount table's engines and lease
// manager under /v1/. Create one with New, then Register its routes. It is
// safe for concurrent use.
type Handler struct {
	mounts *mount.Table
	leases *lease.Manager
	clock  keel.Clock
	groups *identity.Groups
	server Server

	snapshots  *Snapshots // Options.Snapshots
	rateLimits *ratelimit.Limiter
}

// New returns a Handler for the mounts of table: every rule, right and
// piece of state is the table's and its engines'; the Handler decodes
// requests and encodes answers.
func New(table *mount.Table, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Server.Version == "" {
		o.Server.Version = "dev"
	}
	return &Handler{mounts: table, leases: table.Leases(), clock: keel.ClockOrSystem(o.Clock), groups: table.Groups(),
		server: o.Server, snapshots: o.Snapshots, rateLimits: o.RateLimits}
}

// errNoPolicy is Vault's answer to a read or generate of a missing
// password policy.
var errNoPolicy = &vaultError{http.StatusNotFound, []string{"policy does not exist"}}

// noPolicy is err, or errNoPolicy for a missing password policy.
func noPolicy(err error) error {
	if keel.KindOf(err) == keel.KindNotFound {
		return errNoPolicy
	}
	return err
}

// decodePolicy is the text of a password policy as Vault reads it: a
// policy sent in standard base64 is decoded (an HCL policy is never valid
// base64: it holds spaces, quotes or "="s in the wrong places), any other
// is taken as it is.
func decodePolicy(s string) string {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	return s
}

// route is a pattern of http.ServeMux served for each of methods, or for
// every method when methods is "".
type route struct {
	methods, pattern string
	serve            http.HandlerFunc
}

// Register adds the handler's routes to mux: /v1/sys/health,
// /v1/sys/seal-status, /v1/sys/leader, /v1/sys/internal/ui/mounts/…,
// /v1/sys/mounts, /v1/sys/leases/… (with keel's own /v1/sys/leases/hold:
// GET whether the lease manager is held, PUT or POST to hold it, DELETE to
// release it), /v1/sys/policies/password/…,
// /v1/auth/token/lookup-self, /v1/identity/group… (the table's groups, mount.Table.Groups),
// /v1/sys/quotas/lease-count… (the lease manager's quotas),
// /v1/sys/storage/raft/snapshot and …/snapshot-force (with Options.Snapshots),
// /v1/sys/quotas/rate-limit… (Options.RateLimits'),
// and every other /v1/ path, which it routes to the mounted engines. mux is
// an *http.ServeMux, or a router that routes as one does.
func (h *Handler) Register(mux interface {
	http.Handler
	Handle(pattern string, handler http.Handler)
}) {
	const leases, policies = "/v1/sys/leases", "/v1/sys/policies/password"
	pp := h.mounts.PasswordPolicies()
	// Vault's LIST answers every name at once: the pages of pp.List joined.
	listPolicies := func(ctx context.Context) ([]string, error) { return everyKey(ctx, 0, pp.List) }
	routes := []route{
		{"", "/v1/sys/health", h.health},
		{"", "/v1/sys/seal-status", h.sealStatus},
		{"", "/v1/sys/leader", leader},
		{"GET", "/v1/sys/internal/ui/mounts/{path...}", h.uiMount},
		{"GET POST PUT", "/v1/auth/token/lookup-self", lookupSelf},
		{"GET", "/v1/sys/mounts", h.listMounts},
		{"GET", "/v1/sys/mounts/{path...}", h.readMount},
		{"POST PUT", "/v1/sys/mounts/{path...}", h.mount},
		{"DELETE", "/v1/sys/mounts/{path...}", func(w http.ResponseWriter, r *http.Request) {
			writeDone(w, h.mounts.Disable(r.Context(), r.PathValue("path")))
		}},
		{"POST PUT", leases + "/lookup", h.leaseLookup},
		{"LIST GET", leases + "/lookup/{prefix...}", func(w http.ResponseWriter, r *http.Request) {
			listing(mountSystem, "", func(ctx context.Context) ([]string, error) { return h.leaseList(ctx, r.PathValue("prefix")) })(w, r)
		}},
		{"POST PUT", leases + "/renew", h.leaseRenew},
		{"POST PUT", leases + "/renew/{id...}", h.leaseRenew},
		{"POST PUT", leases + "/revoke", h.leaseRevoke},
		{"POST PUT", leases + "/revoke/{id...}", h.leaseRevoke},
		{"POST PUT", leases + "/revoke-prefix/{prefix...}", h.leaseRevokePrefix},
		{"POST PUT", leases + "/revoke-force/{prefix...}", func(w http.ResponseWriter, r *http.Request) {
			writeDone(w, h.leases.RevokeForce(r.Context(), r.PathValue("prefix")))
		}},
		{"POST PUT", leases + "/tidy", h.leaseTidy},
		{"GET", leases + "/count", h.leaseCount},
		// keel's own: the hold of the lease manager (lease.Manager.Hold).
		{"GET", leases + "/hold", func(w http.ResponseWriter, r *http.Request) {
			held, err := h.leases.Held(r.Context())
			writeData(w, err, newResponse(mountSystem, map[string]any{"held": held}))
		}},
		{"POST PUT", leases + "/hold", func(w http.ResponseWriter, r *http.Request) { writeDone(w, h.leases.Hold(r.Context())) }},
		{"DELETE", leases + "/hold", func(w http.ResponseWriter, r *http.Request) { writeDone(w, h.leases.Release(r.Context())) }},
		{"GET", leases, h.leaseIrrevocable},
		{"POST PUT", policies + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			writeWith(w, r, r.PathValue("name"), func(f *fields) string { return decodePolicy(f.str("policy")) }, pp.Put)
		}},
		{"GET", policies + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			text, err := pp.Get(r.Context(), r.PathValue("name"))
			writeData(w, noPolicy(err), newResponse(mountSystem, map[string]any{"policy": text}))
		}},
		{"DELETE", policies + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			writeDone(w, pp.Delete(r.Context(), r.PathValue("name")))
		}},
		{"GET", policies + "/{name}/generate", func(w http.ResponseWriter, r *http.Request) {
			pw, err := pp.Generate(r.Context(), r.PathValue("name"))
			writeData(w, noPolicy(err), newResponse(mountSystem, map[string]any{"password": pw}))
		}},
		{"LIST GET", policies, listing(mountSystem, "LIST", listPolicies)},
		{"LIST GET", policies + "/{$}", listing(mountSystem, "LIST", listPolicies)},
	}
	routes = append(routes, h.groupRoutes()...)
	routes = append(routes, h.quotaRoutes()...)
	routes = append(routes, h.snapshotRoutes()...)
	routes = append(routes, h.rateLimitRoutes()...)
	// A path of a route asked with a method the route does not serve, and
	// the path a subtree pattern ("…/{prefix...}", "…/{$}") names without
	// its slash, would reach the catch-all /v1/ (404 "no handler") or the
	// mux's redirect (307): they get a handler of their own for each of
	// Vault's methods, which answers as Vault does (see unrouted).
	served := map[string][]string{} // pattern -> its methods; nil: every method
	var patterns []string           // in order, for the same mux every time
	for _, rt := range routes {
		if _, seen := served[rt.pattern]; !seen {
			patterns = append(patterns, rt.pattern)
		}
		if rt.methods == "" { // every method: the handler answers 405 itself
			mux.Handle(rt.pattern, checkList(rt.serve))
			served[rt.pattern] = nil
			continue
		}
		for _, method := range strings.Fields(rt.methods) {
			mux.Handle(method+" "+rt.pattern, checkList(rt.serve))
			served[rt.pattern] = append(served[rt.pattern], method)
		}
	}
	for _, pattern := range patterns {
		if i := strings.LastIndex(pattern, "/{"); i > 0 && (strings.HasSuffix(pattern, "...}") || strings.HasSuffix(pattern, "/{$}")) {
			if _, seen := served[pattern[:i]]; !seen {
				patterns = append(patterns, pattern[:i])
				served[pattern[:i]] = []string{}
			}
		}
	}
	for _, pattern := range patterns {
		methods := served[pattern]
		if methods == nil {
			continue
		}
		allow := unrouted(mux, strings.Join(methods, ", "))
		for _, method := range vaultMethods {
			if !slices.Contains(methods, method) {
				mux.Handle(method+" "+pattern, http.HandlerFunc(allow))
			}
		}
	}
	mux.Handle("/v1/", checkList(h.serveMount))
}

// vaultMethods are the methods Vault's clients send (PATCH aside, which
// the adapter refuses as Vault does, whatever the path).
var vaultMethods = []string{"GET", "POST", "PUT", "DELETE", "LIST"}

// unrouted answers a request for a route's path that no method of the
// route serves: a listing (LIST, or GET with list=true) of a path without
// its final slash is served as the listing of the path with it, as Vault
// lists "p/" when asked for "p"; anything else is 405 "unsupported
// operation", as Vault answers an operation a path does not have, with
// allow (the route's methods) as its Allow header when not empty.
func unrouted(mux http.Handler, allow string) http.HandlerFunc {
	return checkList(func(w http.ResponseWriter, r *http.Request) {
		if isList(r) && !strings.HasSuffix(r.URL.Path, "/") {
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path, u.RawPath = u.Path+"/", ""
			r2.URL = &u
			mux.ServeHTTP(w, r2)
			return
		}
		methodNotAllowed(w, allow)
	})
}
