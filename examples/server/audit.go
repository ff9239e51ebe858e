package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/internal/jsonobj"
)

// auditPrefix is where the server keeps its audit devices, one key per
// device path: their type, options and salt, sealed like every value.
const auditPrefix = "server/audit/"

// auditBodyCap is how much of a request's body, and of a response, the
// audit records decode: a longer one is recorded without its data (its
// bytes still reach the handler, or the client, whole).
const auditBodyCap = 1 << 20

// audits are the server's audit devices: package audit's Broker, and
// the Table of its devices kept in the store.
type audits struct {
	broker     *audit.Broker
	table      *audit.Table
	clock      keel.Clock
	authorizer keel.Authorizer
	logger     *slog.Logger
}

// openAudits enables the devices kept in the store, and follows it (see
// audit.Table); the telemetry counts the records no device wrote.
func openAudits(ctx context.Context, d *deps) (*audits, error) {
	a := &audits{
		broker: audit.NewBroker(&audit.Options{Clock: d.clock}), clock: keel.ClockOrSystem(d.clock), authorizer: d.authorizer, logger: d.logger,
	}
	t, err := audit.OpenTable(ctx, d.store, a.broker, &audit.TableOptions{Prefix: auditPrefix, Clock: d.clock, Logger: d.logger})
	if err != nil {
		return nil, err
	}
	a.table = t
	d.onClose(t.Close)
	stop, err := d.telemetry.WatchAudit(a.broker)
	if err != nil {
		return nil, err
	}
	d.onClose(stop)
	return a, nil
}

// reopen reopens every file, as after a rotation (SIGHUP).
func (a *audits) reopen() {
	if err := a.table.Reopen(); err != nil {
		a.logger.Error("audit devices not reopened", "err", err)
	}
}

// register adds Vault's audit routes: GET /v1/sys/audit lists the
// devices; PUT or POST /v1/sys/audit/:path enables one, DELETE disables
// it; PUT or POST /v1/sys/audit-hash/:path hashes "input" with its salt.
// Each needs sudo on sys/audit, as in Vault.
func (a *audits) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sys/audit", a.serveList)
	mux.HandleFunc("PUT /v1/sys/audit/{path...}", a.serveEnable)
	mux.HandleFunc("POST /v1/sys/audit/{path...}", a.serveEnable)
	mux.HandleFunc("DELETE /v1/sys/audit/{path...}", a.serveDisable)
	mux.HandleFunc("PUT /v1/sys/audit-hash/{path...}", a.serveHash)
	mux.HandleFunc("POST /v1/sys/audit-hash/{path...}", a.serveHash)
}

// devicePath is the path of a route's device, with its trailing "/".
func devicePath(r *http.Request) string {
	p := strings.Trim(r.PathValue("path"), "/")
	if p == "" {
		return ""
	}
	return p + "/"
}

// sudo checks that the caller may manage audit devices.
func (a *audits) sudo(w http.ResponseWriter, r *http.Request) bool {
	if err := keel.Authorize(r.Context(), a.authorizer, keel.CapSudo, "sys/audit"); err != nil {
		refuse(w, r, http.StatusForbidden, "permission denied")
		return false
	}
	return true
}

func (a *audits) serveList(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	data := map[string]any{}
	for path, dev := range a.table.List() {
		data[path] = map[string]any{"type": dev.Type, "description": dev.Description, "options": dev.Options, "local": dev.Local, "path": path}
	}
	writeVaultData(w, data, true)
}

// serveEnable enables a device: 400 for a configuration the table refuses
// or a path in use (as Vault), 503 when the store cannot keep it.
func (a *audits) serveEnable(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	var body audit.DeviceConfig
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body); err != nil {
		refuse(w, r, http.StatusBadRequest, "audit: the body must be a JSON object: "+err.Error())
		return
	}
	if err := a.table.Enable(r.Context(), devicePath(r), body); err != nil {
		refuse(w, r, auditStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *audits) serveDisable(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	if err := a.table.Disable(r.Context(), devicePath(r)); err != nil {
		refuse(w, r, auditStatus(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// auditStatus is the status of an error of the device table.
func auditStatus(err error) int {
	switch {
	case errors.Is(err, keel.KindInvalid), errors.Is(err, keel.KindAlreadyExists):
		return http.StatusBadRequest
	case errors.Is(err, keel.KindUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (a *audits) serveHash(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	var body struct {
		Input string `json:"input"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		refuse(w, r, http.StatusBadRequest, "audit: the body must be a JSON object: "+err.Error())
		return
	}
	h, err := a.broker.Hash(devicePath(r), body.Input)
	if err != nil {
		refuse(w, r, http.StatusBadRequest, "unknown audit backend "+devicePath(r))
		return
	}
	writeVaultData(w, map[string]any{"hash": h}, true)
}

// unaudited are the paths whose requests are not recorded: the status
// endpoints anyone may poll, as in Vault.
var unaudited = map[string]bool{"/v1/sys/health": true, "/v1/sys/seal-status": true, "/v1/sys/leader": true}

// middleware records every request under /v1/ (but the status endpoints)
// before it is served, and its response after, when a device is enabled.
// A request no device records is refused with 503, unserved; a response
// no device records is withheld, and 503 answered instead, as Vault
// withholds it (with 500).
func (a *audits) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.table.Enabled() || !strings.HasPrefix(r.URL.Path, "/v1/") || unaudited[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		head, err := io.ReadAll(io.LimitReader(r.Body, auditBodyCap+1))
		if err != nil {
			refuse(w, r, http.StatusBadRequest, "read the body: "+err.Error())
			return
		}
		var rest io.Reader = bytes.NewReader(head)
		if len(head) > auditBodyCap {
			rest = io.MultiReader(rest, r.Body) // not read to its end
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{rest, r.Body}
		req := &audit.Request{
			ID: uuid.NewString(), Operation: operation(r), Path: strings.TrimPrefix(r.URL.Path, "/v1/"),
			RemoteAddress: remoteHost(r.RemoteAddr),
		}
		if len(head) <= auditBodyCap {
			req.Data = jsonObject(head)
		}
		p, _ := keel.PrincipalFrom(ctx)
		auth := &audit.Auth{ClientToken: requestToken(r), Accessor: p.ClientTokenID, DisplayName: p.DisplayName, Policies: p.Policies}
		if err := a.broker.Record(ctx, &audit.Record{Time: a.clock.Now(), Type: audit.TypeRequest, Auth: auth, Request: req}); err != nil {
			a.logger.Error("request not audited: refused", "path", r.URL.Path, "err", err)
			refuse(w, r, http.StatusServiceUnavailable, "failed to audit the request: "+err.Error())
			return
		}
		c := &captured{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(c, r)
		resp := &audit.Response{}
		var errText string
		if n := c.body.Len(); n > 0 && n <= auditBodyCap {
			// Only the members recorded are decoded: the rest of the
			// answer (request_id, lease_id...) is only scanned.
			var obj struct {
				Data   json.RawMessage `json:"data"`
				Errors json.RawMessage `json:"errors"`
			}
			if json.Unmarshal(c.body.Bytes(), &obj) == nil {
				resp.Data = jsonObject(obj.Data)
				var es []any
				if c.status >= 400 && json.Unmarshal(obj.Errors, &es) == nil && len(es) > 0 {
					errText = fmt.Sprint(es...)
				}
			}
		}
		if err := a.broker.Record(ctx, &audit.Record{Time: a.clock.Now(), Type: audit.TypeResponse, Auth: auth, Request: req, Response: resp, Error: errText}); err != nil {
			a.logger.Error("response not audited: withheld", "path", r.URL.Path, "err", err)
			refuse(w, r, http.StatusServiceUnavailable, "failed to audit the response: "+err.Error())
			return
		}
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		w.Write(c.body.Bytes())
	})
}

// captured is a response held until its record is written.
type captured struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
}

func (c *captured) Write(b []byte) (int, error) {
	c.wrote = true
	return c.body.Write(b)
}

// writeVaultData answers 200 with a Vault response whose data is data;
// with top, data's keys are also at the top level, as Vault's sys
// endpoints answer.
func writeVaultData(w http.ResponseWriter, data map[string]any, top bool) {
	body := map[string]any{}
	if top {
		for k, v := range data {
			body[k] = v
		}
	}
	for k, v := range map[string]any{"request_id": uuid.NewString(), "lease_id": "", "renewable": false, "lease_duration": 0,
		"data": data, "wrap_info": nil, "warnings": nil, "auth": nil} {
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// remoteHost is the host of a request's remote address.
func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// operation is Vault's name of the request's operation.
func operation(r *http.Request) string {
	switch {
	case r.Method == "LIST" || r.URL.RawQuery != "" && r.URL.Query().Get("list") == "true":
		return "list"
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return "read"
	case r.Method == http.MethodDelete:
		return "delete"
	default:
		return "update"
	}
}

// jsonObject decodes b as a JSON object, numbers as written (as Vault
// records them), or returns nil.
func jsonObject(b []byte) map[string]any {
	m, err := jsonobj.Decode(b)
	if err != nil {
		return nil
	}
	return m
}
