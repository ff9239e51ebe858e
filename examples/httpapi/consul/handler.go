package consul

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
)

// Options are the optional settings of a Handler; nil means defaults.
type Options struct {
	// Logger receives errors the client does not see. Nil: slog.Default().
	Logger *slog.Logger
}

// Handler serves a peering.Service in Consul's dialect. Create one with
// New, then Register its routes. It is safe for concurrent use.
type Handler struct {
	svc *peering.Service
	log *slog.Logger
}

// New returns the Handler of svc.
func New(svc *peering.Service, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Handler{svc: svc, log: o.Logger}
}

// HeaderClusterToken is the header of a client's token (Consul's
// X-Consul-Token under the spec's name). The program maps it to the
// request's keel.Principal; the adapter reads it only to tell a token the
// program does not know from no token (see the package doc).
const HeaderClusterToken = "X-Cluster-Token"

// The paths of the peer-to-peer messages of HTTPTransport.
const (
	pathExchange  = "/v1/internal/peering/exchange"
	pathHeartbeat = "/v1/internal/peering/heartbeat"
	pathTerminate = "/v1/internal/peering/terminate"
)

// Prefixes returns the first segments of the paths under /v1/ that
// Register serves, each with a trailing "/" ("config/", "internal/",
// "peering/", "peerings/"): a program that serves another dialect's mounts
// under /v1/ beside this one reserves them (mount.Options.Reserved), so
// that no mount is enabled where it would be partly unreachable.
func Prefixes() []string { return []string{"config/", "internal/", "peering/", "peerings/"} }

// Register adds the handler's routes to mux: /v1/peering/token,
// /v1/peering/establish, /v1/peering/{name} (and /v1/peering/ without a
// name, which answers 400 as Consul), /v1/peerings, the config
// entry of kind "exported-services" (PUT /v1/config, GET
// /v1/config/exported-services/default) and the peer-to-peer paths under
// /v1/internal/peering/. Patterns carry no
// method, so that other methods get 405 here and so that they are more
// specific than a "/v1/" catch-all of another adapter. mux is an
// *http.ServeMux, or a router that routes as one does.
func (h *Handler) Register(mux interface {
	http.Handler
	Handle(pattern string, handler http.Handler)
}) {
	mux.Handle("/v1/peering/token", http.HandlerFunc(h.token))
	mux.Handle("/v1/peering/establish", http.HandlerFunc(h.establish))
	mux.Handle("/v1/peering/{name}", http.HandlerFunc(h.peering))
	mux.Handle("/v1/peering/{$}", http.HandlerFunc(noName))
	mux.Handle("/v1/peerings", http.HandlerFunc(h.list))
	mux.Handle("/v1/config", http.HandlerFunc(h.configSet))
	mux.Handle("/v1/config/{kind}/{name}", http.HandlerFunc(h.configGet))
	mux.Handle(pathExchange, http.HandlerFunc(h.exchange))
	mux.Handle(pathHeartbeat, http.HandlerFunc(h.heartbeat))
	mux.Handle(pathTerminate, http.HandlerFunc(h.terminate))
}

// tokenRequest is the body of POST /v1/peering/token.
type tokenRequest struct {
	PeerName                string
	Partition               string
	ServerExternalAddresses []string
	Meta                    map[string]string
}

// establishRequest is the body of POST /v1/peering/establish.
type establishRequest struct {
	PeerName     string
	Partition    string
	PeeringToken string
	Meta         map[string]string
}

func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	serveClient(w, r, http.MethodPost, func(ctx context.Context, req *tokenRequest) (map[string]string, error) {
		tok, err := h.svc.GenerateToken(ctx, peering.TokenRequest{
			PeerName: req.PeerName, Partition: partition(r, req.Partition),
			ServerExternalAddresses: req.ServerExternalAddresses, Meta: req.Meta,
		})
		return map[string]string{"PeeringToken": tok}, err
	})
}

// establish serves POST /v1/peering/establish. A token whose secret the
// acceptor refused (used, replaced, or of a peering gone: errRefused of
// HTTPTransport) answers 403, as Consul answers it; package peering
// classifies it as invalid, as the token's other problems, which answer
// 400.
func (h *Handler) establish(w http.ResponseWriter, r *http.Request) {
	serveClient(w, r, http.MethodPost, func(ctx context.Context, req *establishRequest) (struct{}, error) {
		err := h.svc.Establish(ctx, peering.EstablishRequest{
			PeerName: req.PeerName, Partition: partition(r, req.Partition),
			PeeringToken: req.PeeringToken, Meta: req.Meta,
		})
		if errors.Is(err, errRefused) {
			err = errTokenRefused
		}
		return struct{}{}, err
	})
}

// noName answers /v1/peering/ (no name), whatever the method, as Consul.
func noName(w http.ResponseWriter, r *http.Request) { writeError(w, r, errNoName) }

func (h *Handler) peering(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	switch r.Method {
	case http.MethodGet:
		q, err := query(r)
		if err == nil {
			err = checkToken(r)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		allowWait(w, r, &q)
		p, idx, err := h.svc.Get(r.Context(), name, q)
		if keel.KindOf(err) == keel.KindNotFound {
			setIndex(w, idx)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		setIndex(w, idx)
		writeJSON(w, wirePeering(p))
	case http.MethodDelete:
		err := checkToken(r)
		if err == nil {
			err = h.svc.Delete(r.Context(), name, peering.DeleteRequest{Partition: r.URL.Query().Get("partition")})
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		methodNotAllowed(w, "GET, DELETE")
	}
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	q, err := query(r)
	if err == nil {
		err = checkToken(r)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	allowWait(w, r, &q)
	l, err := h.svc.List(r.Context(), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	setIndex(w, l.Index)
	if l.Filtered {
		w.Header().Set("X-Cluster-Results-Filtered-By-ACLs", "true")
		w.Header().Set("X-Consul-Results-Filtered-By-ACLs", "true")
	}
	out := make([]*Peering, len(l.Peerings))
	for i, p := range l.Peerings {
		out[i] = wirePeering(p)
	}
	writeJSON(w, out)
}

// partition returns the body's partition, or else the query's.
func partition(r *http.Request, body string) string {
	if body != "" {
		return body
	}
	return r.URL.Query().Get("partition")
}

// query reads the peering.Query of a GET (Get or List): ?index is
// MinIndex, ?wait WaitTime, ?partition Partition; ?consistent and ?stale
// are accepted and change nothing (every read is consistent). As
// Consul's, ?wait is a Go duration ("30s"; a number without a unit is
// refused) and ?index a decimal integer; each answers 400 in Consul's
// words when it does not parse ("Invalid wait time", "Invalid index"). A
// negative wait is refused too.
func query(r *http.Request) (peering.Query, error) {
	v := r.URL.Query()
	q := peering.Query{Partition: v.Get("partition")}
	if s := v.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return peering.Query{}, errWait
		}
		q.WaitTime = d
	}
	if s := v.Get("index"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return peering.Query{}, errIndex
		}
		q.MinIndex = n
	}
	return q, nil
}

// AnswerMargin is the time a blocking read keeps, past its wait, to write
// its answer: allowWait sets the connection's write deadline to the wait
// plus AnswerMargin.
const AnswerMargin = 10 * time.Second

// allowWait makes sure that the blocking read q (one with ?index) can
// answer after its whole wait: ?wait, peering.DefaultWait (5 minutes)
// without it, at most peering.MaxWait. When the server's WriteTimeout
// would end the response before the wait plus AnswerMargin, it moves the
// write deadline of this request (http.ResponseController) to now plus
// the wait plus AnswerMargin; when the writer cannot move it, it shortens
// the wait instead, to the server's WriteTimeout less AnswerMargin (half
// of it when that is less). A server without WriteTimeout, or with one
// longer than the wait plus AnswerMargin, is left as it is, and so is a
// read that does not block.
func allowWait(w http.ResponseWriter, r *http.Request, q *peering.Query) {
	if q.MinIndex == 0 {
		return
	}
	wait := q.WaitTime
	if wait == 0 {
		wait = peering.DefaultWait
	}
	wait = min(wait, peering.MaxWait)
	need := wait + AnswerMargin
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv != nil && (srv.WriteTimeout <= 0 || srv.WriteTimeout >= need) {
		return
	}
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(need)); err == nil || srv == nil {
		return
	}
	q.WaitTime = max(srv.WriteTimeout-AnswerMargin, srv.WriteTimeout/2)
}
