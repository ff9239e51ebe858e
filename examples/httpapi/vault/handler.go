package vault

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// Options configure a Handler. A nil *Options means defaults.
type Options struct {
	Authorizer keel.Authorizer  // nil: allow all
	Clock      keel.Clock       // nil: the system clock
	Logger     *slog.Logger     // nil: discard
	Groups     *identity.Groups // nil: no identity group endpoints

	// Directory reaches the LDAP servers of the ldap and openldap
	// mounts. Nil: ldapengine.LDAP{}, the real one; tests pass an
	// ldapengine.FakeDirectory.
	Directory ldapengine.Directory
	// Leaders gives the leader of the rotation worker of each ldap or
	// openldap mount, by a name made of the mount path. Nil: every worker
	// runs always.
	Leaders func(name string) leader.Leader
}

// Handler serves the Vault-style API of keel's kv engines and lease manager
// under /v1/. Create one with New, then Register its routes. It is safe for
// concurrent use.
type Handler struct {
	store      storage.Store
	leases     *lease.Manager
	authorizer keel.Authorizer
	clock      keel.Clock
	logger     *slog.Logger
	groups     *identity.Groups
	directory  ldapengine.Directory
	leaders    func(name string) leader.Leader
	policies   *ldapengine.PasswordPolicies

	mu     sync.RWMutex
	mounts map[string]*mounted // by path, with a trailing "/"
	closed bool                // by Close: no more rotation workers start
}

// New loads the mount table from store (creating the default "secret/" kv,
// "ldap/" and "openldap/" mounts on the first start), builds an engine per
// mount, starts the rotation workers of the ldap and openldap engines (see
// Close), and registers each mount with leases. store is the server's whole
// store: the adapter keeps its mount table at "sys/mounts", each kv mount's
// data under "kv/<mount uuid>/", and the ldap engines' data and password
// policies where package ldapengine keeps them ("ldapengine/").
func New(ctx context.Context, store storage.Store, leases *lease.Manager, opts *Options) (*Handler, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Authorizer == nil {
		o.Authorizer = keel.AllowAll{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Handler{
		store: store, leases: leases,
		authorizer: o.Authorizer, clock: keel.ClockOrSystem(o.Clock), logger: o.Logger,
		groups: o.Groups, directory: o.Directory, leaders: o.Leaders,
		policies: ldapengine.NewPasswordPolicies(store, o.Authorizer),
		mounts:   make(map[string]*mounted),
	}
	if err := h.loadMounts(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Register adds the handler's routes to mux: /v1/sys/mounts,
// /v1/sys/leases/…, /v1/sys/policies/password/…, and every other /v1/
// path, which it routes to the mounted engines.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sys/mounts", h.listMounts)
	mux.HandleFunc("POST /v1/sys/mounts/{path...}", h.mount)
	mux.HandleFunc("PUT /v1/sys/mounts/{path...}", h.mount)
	mux.HandleFunc("DELETE /v1/sys/mounts/{path...}", h.unmount)
	h.registerLeases(mux)
	h.registerIdentity(mux)
	h.registerPasswordPolicies(mux)
	mux.HandleFunc("/v1/", h.serveMount)
}
