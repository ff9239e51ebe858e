// Package floor is the yardstick of keel's HTTP figures (issue 32): a bare
// net/http server that keeps kv values in a map behind a mutex and speaks
// Vault's kv version 1 routes under /v1/secret/, answering Vault's JSON
// shapes closely enough that vault/api's Logical().Read, Write, Delete and
// List work against it.
//
// It does what no server can skip: read the request, check that a written
// body is a JSON object, keep its bytes, and write the answer. It checks no
// token, logs nothing, bounds nothing and stores nothing durably. A list
// scans the whole map: that is what a map behind a mutex offers.
//
//	GET    /v1/secret/<path>             200 {"data": <the body written>, ...}, 404 {"errors":[]}
//	PUT    /v1/secret/<path> (or POST)   204; 400 when the body is not a JSON object
//	DELETE /v1/secret/<path>             204
//	LIST   /v1/secret/<folder>/ (or GET ?list=true)
//	                                     200 {"data":{"keys":[...]}} sorted, folders with a trailing "/"; 404 when empty
package floor

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Prefix is the route of the kv mount.
const Prefix = "/v1/secret/"

// maxBody bounds a written body.
const maxBody = 1 << 20

// Handler is the floor server's http.Handler. Its zero value is not
// usable: make it with New.
type Handler struct {
	mu   sync.RWMutex
	data map[string][]byte // path below Prefix -> the JSON object written
}

// New returns an empty Handler.
func New() *Handler { return &Handler{data: make(map[string][]byte)} }

// ServeHTTP serves the kv routes; any other path answers 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		writeErrors(w, http.StatusNotFound)
		return
	}
	switch {
	case r.Method == "LIST" || (r.Method == http.MethodGet && r.URL.Query().Get("list") == "true"):
		h.list(w, p)
	case r.Method == http.MethodGet:
		h.mu.RLock()
		v, ok := h.data[p]
		h.mu.RUnlock()
		if !ok {
			writeErrors(w, http.StatusNotFound)
			return
		}
		b := make([]byte, 0, len(readHead)+len(v)+len(readTail))
		b = append(append(append(b, readHead...), v...), readTail...)
		writeBody(w, b)
	case r.Method == http.MethodPut || r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		body = bytes.TrimSpace(body)
		if err != nil || len(body) > maxBody || len(body) == 0 || body[0] != '{' || !json.Valid(body) {
			writeErrors(w, http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.data[p] = body
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		h.mu.Lock()
		delete(h.data, p)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeErrors(w, http.StatusMethodNotAllowed)
	}
}

// Vault's envelope of a kv version 1 read (a fixed request id: the floor
// makes none).
const (
	readHead = `{"request_id":"00000000-0000-0000-0000-000000000000","lease_id":"","renewable":false,"lease_duration":2764800,"data":`
	readTail = `,"wrap_info":null,"warnings":null,"auth":null}` + "\n"
)

// list answers the names right below folder: keys, and folders with a
// trailing "/", sorted, each once.
func (h *Handler) list(w http.ResponseWriter, folder string) {
	if folder != "" && !strings.HasSuffix(folder, "/") {
		folder += "/"
	}
	var keys []string
	seen := map[string]bool{}
	h.mu.RLock()
	for k := range h.data {
		rest, ok := strings.CutPrefix(k, folder)
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i+1]
			if seen[rest] {
				continue
			}
			seen[rest] = true
		}
		keys = append(keys, rest)
	}
	h.mu.RUnlock()
	if len(keys) == 0 {
		writeErrors(w, http.StatusNotFound)
		return
	}
	slices.Sort(keys)
	b, err := json.Marshal(keys)
	if err != nil {
		writeErrors(w, http.StatusInternalServerError)
		return
	}
	out := make([]byte, 0, len(listHead)+len(b)+len(listTail))
	out = append(append(append(out, listHead...), b...), listTail...)
	writeBody(w, out)
}

const (
	listHead = `{"request_id":"00000000-0000-0000-0000-000000000000","lease_id":"","renewable":false,"lease_duration":0,"data":{"keys":`
	listTail = `},"wrap_info":null,"warnings":null,"auth":null}` + "\n"
)

func writeBody(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // the client went away; nothing to do
}

// writeErrors answers Vault's shape of an error without a message.
func writeErrors(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, "{\"errors\":[]}\n") //nolint:errcheck // as writeBody
}
