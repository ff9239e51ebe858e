package vault

import (
	"context"
	"mime"
	"net/http"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/internal/jsonbody"
)

// serveMount routes a request under /v1/ to the engine mounted there.
func (h *Handler) serveMount(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPatch {
		refusePatch(w, r)
		return
	}
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
		keys, err := allKeys(ctx, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
			return m.KV.List(ctx, rest, r)
		})
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
		data, ok := jsonbody.Flat(r)
		var err error
		if !ok {
			err = decodeBody(w, r, &data)
		}
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

// mergePatch is the one media type of Vault's PATCH requests.
const mergePatch = "application/merge-patch+json"

// refusePatch answers a PATCH as Vault answers it on paths without a patch
// operation (kv version 1 has none, nor does any endpoint here): 400 when
// the Content-Type does not parse (an absent one included), 415 when it is
// not application/merge-patch+json, else 405 "unsupported operation".
func refusePatch(w http.ResponseWriter, r *http.Request) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case err != nil:
		writeMessage(w, http.StatusBadRequest, err.Error())
	case ct != mergePatch:
		writeMessage(w, http.StatusUnsupportedMediaType, "PATCH requires Content-Type of "+mergePatch+", provided "+ct)
	default:
		methodNotAllowed(w, "")
	}
}

// allKeys returns every name of a paged list, as Vault's LIST answers
// them: one page's names as they are, more pages' joined.
func allKeys(ctx context.Context, list func(context.Context, keel.ListRequest) (keel.Page[string], error)) ([]string, error) {
	p, err := list(ctx, keel.ListRequest{})
	keys := p.Items
	for err == nil && p.Next != "" {
		if p, err = list(ctx, keel.ListRequest{Cursor: p.Next}); err == nil {
			keys = append(keys, p.Items...)
		}
	}
	if err != nil {
		return nil, err
	}
	return keys, nil
}
