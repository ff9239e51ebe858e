package vault

import (
	"net/http"
	"strings"
)

// serveMount routes a request under /v1/ to the engine mounted there.
func (h *Handler) serveMount(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1/")
	m, rest, ok := h.mounts.Route(p)
	if !ok {
		writeMessage(w, http.StatusNotFound, "no handler for route \""+p+"\". route entry not found.")
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
		writeRead(w, m.Type, err, keysData(keys))
	case r.Method == http.MethodGet:
		sec, err := m.KV.Read(ctx, rest)
		if err != nil {
			writeError(w, missing(err))
			return
		}
		// The secret as stored is the JSON encoding of sec.Data: it is
		// written as it is instead of encoding sec.Data again.
		resp := leasedResponse(m.Type, sec.LeaseID, sec.Renewable, sec.LeaseDuration, rawData(sec.JSON))
		writeJSON(w, http.StatusOK, resp)
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		var data map[string]any
		err := decodeBody(w, r, &data)
		if err == nil {
			err = m.KV.Write(ctx, rest, data)
		}
		writeDone(w, err)
	case r.Method == http.MethodDelete:
		writeDone(w, m.KV.Delete(ctx, rest))
	default:
		methodNotAllowed(w, "GET, LIST, POST, PUT, DELETE")
	}
}
