package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"

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
	calls      sync.Pool // of *auditCall, the middleware's
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
func (a *audits) register(mux *routes) {
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
		c, _ := a.calls.Get().(*auditCall)
		if c == nil {
			c = newAuditCall()
		}
		orig := r.Body
		defer func() {
			r.Body = orig // no reference to c is left once it is kept for another request
			a.calls.Put(c)
		}()
		c.reset()
		ctx := r.Context()
		var err error
		c.in, err = readUpTo(c.in[:0], r.Body, auditBodyCap+1)
		if err != nil {
			refuse(w, r, http.StatusBadRequest, "read the body: "+err.Error())
			return
		}
		c.inReader.Reset(c.in)
		c.body.Reader, c.body.Closer = &c.inReader, r.Body
		if len(c.in) > auditBodyCap {
			c.body.Reader = io.MultiReader(&c.inReader, r.Body) // not read to its end
		}
		r.Body = &c.body
		c.req = audit.Request{
			ID: c.newID(), Operation: operation(r), Path: strings.TrimPrefix(r.URL.Path, "/v1/"),
			RemoteAddress: remoteHost(r.RemoteAddr),
		}
		if len(c.in) <= auditBodyCap {
			c.req.RawData = c.in // hashed from the JSON by the Broker, not decoded here
		}
		p, _ := keel.PrincipalFrom(ctx)
		c.auth = audit.Auth{ClientToken: requestToken(r), Accessor: p.ClientTokenID, DisplayName: p.DisplayName, Policies: p.Policies}
		c.rec = audit.Record{Time: a.clock.Now(), Type: audit.TypeRequest, Auth: &c.auth, Request: &c.req}
		if err := a.broker.Record(ctx, &c.rec); err != nil {
			a.logger.Error("request not audited: refused", "path", r.URL.Path, "err", err)
			refuse(w, r, http.StatusServiceUnavailable, "failed to audit the request: "+err.Error())
			return
		}
		next.ServeHTTP(&c.captured, r)
		c.rec = audit.Record{Time: a.clock.Now(), Type: audit.TypeResponse, Auth: &c.auth, Request: &c.req, Response: &c.resp}
		if n := c.out.Len(); n > 0 && n <= auditBodyCap {
			// Only the members recorded are taken: the rest of the
			// answer (request_id, lease_id...) is only scanned, and data
			// is hashed from its JSON by the Broker.
			if data, errs, ok := responseMembers(c.out.Bytes()); ok {
				c.resp.RawData = data
				var es []any
				if c.status >= 400 && errs != nil && json.Unmarshal(errs, &es) == nil && len(es) > 0 {
					c.rec.Error = fmt.Sprint(es...)
				}
			}
		}
		if err := a.broker.Record(ctx, &c.rec); err != nil {
			a.logger.Error("response not audited: withheld", "path", r.URL.Path, "err", err)
			refuse(w, r, http.StatusServiceUnavailable, "failed to audit the response: "+err.Error())
			return
		}
		h := w.Header()
		for k, v := range c.header {
			h[k] = v
		}
		w.WriteHeader(c.status)
		w.Write(c.out.Bytes())
	})
}

// auditCall is what the middleware holds for one request: the records,
// the request's body read ahead and the response held back, kept for the
// next request (audits.calls) so that an audited request allocates little.
// The Broker keeps no record after Record returns.
type auditCall struct {
	captured
	in       []byte // the request's body, up to auditBodyCap+1 bytes
	inReader bytes.Reader
	body     struct {
		io.Reader
		io.Closer
	}
	auth audit.Auth
	req  audit.Request
	resp audit.Response
	rec  audit.Record
	ids  *rand.ChaCha8 // of the request IDs
}

// maxKept is the largest body buffer an auditCall keeps for the next
// request.
const maxKept = 64 << 10

func newAuditCall() *auditCall {
	var seed [32]byte
	crand.Read(seed[:]) // never fails: crypto/rand crashes the program instead
	return &auditCall{captured: captured{header: http.Header{}}, ids: rand.NewChaCha8(seed)}
}

// reset makes c ready for a request.
func (c *auditCall) reset() {
	clear(c.header)
	c.status, c.wrote = http.StatusOK, false
	if c.out.Cap() > maxKept {
		c.out = bytes.Buffer{}
	}
	c.out.Reset()
	if cap(c.in) > maxKept {
		c.in = nil
	}
	c.body.Reader, c.body.Closer = nil, nil
	c.auth, c.req, c.resp, c.rec = audit.Auth{}, audit.Request{}, audit.Response{}, audit.Record{}
}

// newID returns a random (version 4) UUID, Vault's request ID, drawn from
// c's own generator, seeded from crypto/rand: no read of the system's
// random source per request.
func (c *auditCall) newID() string {
	var u [16]byte
	c.ids.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 4122 variant
	return uuid.UUID(u).String()
}

// readUpTo appends to b what r holds, up to n bytes.
func readUpTo(b []byte, r io.Reader, n int) ([]byte, error) {
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	for len(b) < n {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := r.Read(b[len(b):min(cap(b), n)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// responseMembers returns the raw values of the members "data" and
// "errors" of body, a JSON object (nil for a member it does not have), or
// false when body is not an object. The values are only scanned: the
// caller decodes what it records.
func responseMembers(body []byte) (data, errs []byte, ok bool) {
	i := jsonobj.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, nil, false
	}
	i = jsonobj.SkipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return nil, nil, true
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return nil, nil, false
		}
		ks := i
		if i, ok = skipValue(body, i); !ok {
			return nil, nil, false
		}
		key := body[ks:i]
		i = jsonobj.SkipSpace(body, i)
		if i >= len(body) || body[i] != ':' {
			return nil, nil, false
		}
		vs := jsonobj.SkipSpace(body, i+1)
		if i, ok = skipValue(body, vs); !ok {
			return nil, nil, false
		}
		switch string(key) {
		case `"data"`:
			data = body[vs:i]
		case `"errors"`:
			errs = body[vs:i]
		}
		i = jsonobj.SkipSpace(body, i)
		if i >= len(body) {
			return nil, nil, false
		}
		switch body[i] {
		case ',':
			i = jsonobj.SkipSpace(body, i+1)
		case '}':
			return data, errs, true
		default:
			return nil, nil, false
		}
	}
}

// skipValue returns the index after the JSON value at b[i]: a string, an
// object or an array (their brackets matched, outside strings), or a
// literal (up to the next delimiter); false when it does not end.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	depth, inString := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case inString:
			switch c {
			case '\\':
				j++
			case '"':
				inString = false
				if depth == 0 {
					return j + 1, true
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j, j > i
			}
			if depth--; depth == 0 {
				return j + 1, true
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ':'):
			return j, j > i
		}
	}
	return len(b), depth == 0 && !inString && len(b) > i
}

// captured is a response held until its record is written.
type captured struct {
	header http.Header
	status int
	wrote  bool
	out    bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
}

func (c *captured) Write(b []byte) (int, error) {
	c.wrote = true
	return c.out.Write(b)
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
