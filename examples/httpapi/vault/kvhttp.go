package vault

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
)

// isList reports whether r asks for a listing: the LIST method, or GET with
// list=true.
func isList(r *http.Request) bool {
	if r.Method == "LIST" {
		return true
	}
	if r.Method != http.MethodGet || r.URL.RawQuery == "" {
		return false // no query to parse (and allocate) on every read
	}
	b, _ := strconv.ParseBool(r.URL.Query().Get("list"))
	return b
}

// serveMount routes a request under /v1/ to the engine mounted there.
func (h *Handler) serveMount(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1/")
	m, rest, ok := h.mounts.Route(p)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"no handler for route \"" + p + "\". route entry not found."}})
		return
	}
	if m.LDAP != nil {
		h.serveLDAP(w, r, m.LDAP, rest)
		return
	}
	ctx := r.Context()
	switch {
	case isList(r):
		keys, err := m.KV.List(ctx, rest)
		if keel.KindOf(err) == keel.KindNotFound {
			writeNotFound(w)
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, newResponse(keysData(keys)))
	case r.Method == http.MethodGet:
		sec, err := m.KV.Read(ctx, rest)
		if keel.KindOf(err) == keel.KindNotFound {
			writeNotFound(w)
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		// The secret as stored is the JSON encoding of sec.Data: it is
		// written as it is instead of encoding sec.Data again.
		resp := newResponse(rawData(sec.JSON))
		resp.LeaseID, resp.Renewable = sec.LeaseID, sec.Renewable
		resp.LeaseDuration = int64(sec.LeaseDuration / time.Second)
		resp.MountType = "kv"
		writeJSON(w, http.StatusOK, resp)
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		var data map[string]any
		if err := decodeBody(w, r, &data); err != nil {
			writeError(w, err)
			return
		}
		if err := m.KV.Write(ctx, rest, data); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		if err := m.KV.Delete(ctx, rest); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, LIST, POST, PUT, DELETE")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
	}
}
