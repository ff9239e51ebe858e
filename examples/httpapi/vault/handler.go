package vault

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
)

// Options configure a Handler. A nil *Options means defaults.
type Options struct {
	Clock  keel.Clock       // nil: the system clock
	Logger *slog.Logger     // nil: discard
	Groups *identity.Groups // nil: no identity group endpoints
}

// Handler serves the Vault-style API of a mount table's engines and lease
// manager under /v1/. Create one with New, then Register its routes. It is
// safe for concurrent use.
type Handler struct {
	mounts *mount.Table
	leases *lease.Manager
	clock  keel.Clock
	logger *slog.Logger
	groups *identity.Groups
}

// New returns a Handler for the mounts of table: every rule, right and
// piece of state is the table's and its engines'; the Handler decodes
// requests and encodes answers.
func New(table *mount.Table, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Handler{
		mounts: table, leases: table.Leases(),
		clock: keel.ClockOrSystem(o.Clock), logger: o.Logger, groups: o.Groups,
	}
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
