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
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/internal/jsonobj"
	"github.com/keelhq/keel/storage"
)

// auditPrefix is where the server keeps its audit devices, one key per
// device path: their type, options and salt, sealed like every value.
const auditPrefix = "server/audit/"

// auditBodyCap is how much of a request's body, and of a response, the
// audit records decode: a longer one is recorded without its data (its
// bytes still reach the handler, or the client, whole).
const auditBodyCap = 1 << 20

// auditDevice is the stored configuration of one device, in Vault's
// fields.
type auditDevice struct {
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Options     map[string]string `json:"options"`
	Local       bool              `json:"local"`
	Salt        []byte            `json:"salt"`
}

// audits are the server's audit devices: package audit's Broker, the
// files it writes, and their configuration in the store.
type audits struct {
	broker     *audit.Broker
	clock      keel.Clock
	store      storage.Store
	authorizer keel.Authorizer
	logger     *slog.Logger

	mu      sync.Mutex
	files   map[string]*audit.File
	devices map[string]auditDevice
	// active is whether a device is enabled, read by every request
	// without a lock.
	active atomic.Bool
}

// openAudits enables the devices kept in store, and follows the store:
// a device enabled or disabled through another server of the same etcd
// (or by a restore) is enabled or disabled here too, soon after. A device
// whose file cannot be opened is logged and left disabled: the server
// still starts, so that an operator can fix or disable it.
func openAudits(ctx context.Context, d *deps) (*audits, error) {
	a := &audits{
		broker: audit.NewBroker(&audit.Options{Clock: d.clock}), clock: keel.ClockOrSystem(d.clock), store: d.store, authorizer: d.authorizer, logger: d.logger,
		files: map[string]*audit.File{}, devices: map[string]auditDevice{},
	}
	changed := make(chan struct{}, 1)
	stopWatch, err := storage.Watch(ctx, d.store, auditPrefix, func(string) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("audit devices: %w", err)
	}
	if err := a.follow(ctx); err != nil {
		stopWatch()
		return nil, err
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-changed:
				if err := a.follow(context.Background()); err != nil {
					a.logger.Error("audit devices not read again", "err", err)
				}
			case <-done:
				return
			}
		}
	}()
	d.onClose(func() error {
		stopWatch()
		close(done)
		<-ended
		return a.close()
	})
	return a, nil
}

// follow brings the enabled devices in line with those kept in the store:
// it enables those it does not have and disables those no longer kept.
func (a *audits) follow(ctx context.Context) error {
	kept := map[string]auditDevice{}
	err := a.store.View(ctx, func(_ context.Context, tx storage.Tx) error {
		clear(kept)
		return tx.Scan(auditPrefix, storage.ScanOptions{}, func(key string, v []byte) error {
			var dev auditDevice
			if err := json.Unmarshal(v, &dev); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			kept[strings.TrimPrefix(key, auditPrefix)] = dev
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("audit devices: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for path, dev := range a.devices {
		// Gone, or enabled anew (another salt) by another server.
		if k, ok := kept[path]; !ok || !bytes.Equal(k.Salt, dev.Salt) {
			delete(a.devices, path)
			a.disableLocked(path)
		}
	}
	for path, dev := range kept {
		if _, ok := a.devices[path]; ok {
			continue
		}
		a.devices[path] = dev
		if err := a.enable(path, dev); err != nil {
			a.logger.Error("audit device not enabled", "path", path, "err", err)
		}
	}
	return nil
}

// enable opens dev's file and adds it to the broker under path.
func (a *audits) enable(path string, dev auditDevice) error {
	mode := 0o600
	if m, ok := dev.Options["mode"]; ok {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v > 0o777 {
			return keel.Invalid(`Options["mode"]`, "must be an octal file mode such as 0600, got %q", m)
		}
		mode = int(v)
	}
	f, err := audit.OpenFile(dev.Options["file_path"], &audit.FileOptions{Mode: os.FileMode(mode)})
	if err != nil {
		return err
	}
	salt, err := audit.NewSalt(dev.Salt)
	if err == nil {
		err = a.broker.Enable(path, f, salt)
	}
	if err != nil {
		f.Close()
		return err
	}
	a.files[path] = f
	a.active.Store(true)
	return nil
}

// reopen reopens every file, as after a rotation (SIGHUP).
func (a *audits) reopen() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for path, f := range a.files {
		if err := f.Reopen(); err != nil {
			a.logger.Error("audit device not reopened", "path", path, "err", err)
		}
	}
}

func (a *audits) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, f := range a.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
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
	a.mu.Lock()
	data := map[string]any{}
	for path, dev := range a.devices {
		data[path] = map[string]any{"type": dev.Type, "description": dev.Description, "options": dev.Options, "local": dev.Local, "path": path}
	}
	a.mu.Unlock()
	writeVaultData(w, data, true)
}

func (a *audits) serveEnable(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	path := devicePath(r)
	var body struct {
		Type        string            `json:"type"`
		Description string            `json:"description"`
		Options     map[string]string `json:"options"`
		Local       bool              `json:"local"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body); err != nil {
		refuse(w, r, http.StatusBadRequest, "audit: the body must be a JSON object: "+err.Error())
		return
	}
	var v keel.Validation
	if path == "" {
		v.Add("path", "is required")
	}
	if body.Type != "file" {
		v.Add("type", "must be \"file\", the one device type this server has; got %q", body.Type)
	}
	for k, val := range body.Options {
		switch k {
		case "file_path":
			if val == "" || val == "stdout" || val == "discard" {
				v.Add("options.file_path", "must be the path of a file (stdout and discard are not supported), got %q", val)
			}
		case "mode":
		default:
			v.Add("options."+k, "is not supported (only file_path and mode are)")
		}
	}
	if _, ok := body.Options["file_path"]; !ok {
		v.Add("options.file_path", "is required")
	}
	if err := v.Err(); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	dev := auditDevice{Type: body.Type, Description: body.Description, Options: body.Options, Local: body.Local, Salt: audit.GenerateSalt()}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.devices[path]; ok {
		refuse(w, r, http.StatusBadRequest, fmt.Sprintf("path already in use at %s", path))
		return
	}
	if err := a.enable(path, dev); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	b, err := json.Marshal(dev)
	if err == nil {
		err = a.store.Update(r.Context(), func(_ context.Context, tx storage.Tx) error { return tx.Put(auditPrefix+path, b) })
	}
	if err != nil {
		a.disableLocked(path)
		refuse(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	a.devices[path] = dev
	w.WriteHeader(http.StatusNoContent)
}

func (a *audits) serveDisable(w http.ResponseWriter, r *http.Request) {
	if !a.sudo(w, r) {
		return
	}
	path := devicePath(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.devices[path]; !ok {
		w.WriteHeader(http.StatusNoContent) // as Vault: disabling a missing device succeeds
		return
	}
	if err := a.store.Update(r.Context(), func(_ context.Context, tx storage.Tx) error { return tx.Delete(auditPrefix + path) }); err != nil {
		refuse(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	delete(a.devices, path)
	a.disableLocked(path)
	w.WriteHeader(http.StatusNoContent)
}

// disableLocked removes path from the broker and closes its file. Called
// with a.mu held.
func (a *audits) disableLocked(path string) {
	a.broker.Disable(path)
	if f := a.files[path]; f != nil {
		f.Close()
		delete(a.files, path)
	}
	a.active.Store(len(a.files) > 0)
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
		if !a.active.Load() || !strings.HasPrefix(r.URL.Path, "/v1/") || unaudited[r.URL.Path] {
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
