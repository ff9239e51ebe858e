package vault

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// Options configure a Handler. A nil *Options means defaults.
type Options struct {
	Authorizer keel.Authorizer  // nil: allow all
	Clock      keel.Clock       // nil: the system clock
	Logger     *slog.Logger     // nil: discard
	Groups     *identity.Groups // nil: no identity group endpoints
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

	mu     sync.RWMutex
	mounts map[string]*mounted // by path, with a trailing "/"
}

// New loads the mount table from store (creating the default "secret/" kv
// mount on the first start), builds an engine per mount, and registers each
// mount with leases. store is the server's whole store: the adapter keeps
// its mount table at "sys/mounts" and each kv mount's data under
// "kv/<mount uuid>/".
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
		groups: o.Groups,
		mounts: make(map[string]*mounted),
	}
	if err := h.loadMounts(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Register adds the handler's routes to mux: /v1/sys/mounts,
// /v1/sys/leases/…, and every other /v1/ path, which it routes to the
// mounted engines.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sys/mounts", h.listMounts)
	mux.HandleFunc("POST /v1/sys/mounts/{path...}", h.mount)
	mux.HandleFunc("PUT /v1/sys/mounts/{path...}", h.mount)
	mux.HandleFunc("DELETE /v1/sys/mounts/{path...}", h.unmount)
	h.registerLeases(mux)
	h.registerIdentity(mux)
	mux.HandleFunc("/v1/", h.serveMount)
}
