package vault

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
)

func (h *Handler) registerLeases(mux *http.ServeMux) {
	for _, method := range []string{"POST", "PUT"} {
		mux.HandleFunc(method+" /v1/sys/leases/lookup", h.leaseLookup)
		mux.HandleFunc(method+" /v1/sys/leases/renew", h.leaseRenew)
		mux.HandleFunc(method+" /v1/sys/leases/renew/{id...}", h.leaseRenew)
		mux.HandleFunc(method+" /v1/sys/leases/revoke", h.leaseRevoke)
		mux.HandleFunc(method+" /v1/sys/leases/revoke/{id...}", h.leaseRevoke)
		mux.HandleFunc(method+" /v1/sys/leases/revoke-prefix/{prefix...}", h.leaseRevokePrefix)
		mux.HandleFunc(method+" /v1/sys/leases/revoke-force/{prefix...}", h.leaseRevokeForce)
		mux.HandleFunc(method+" /v1/sys/leases/tidy", h.leaseTidy)
	}
	mux.HandleFunc("LIST /v1/sys/leases/lookup/{prefix...}", h.leaseList)
	mux.HandleFunc("GET /v1/sys/leases/lookup/{prefix...}", h.leaseList)
	mux.HandleFunc("GET /v1/sys/leases/count", h.leaseCount)
	mux.HandleFunc("GET /v1/sys/leases", h.leaseIrrevocable)
}

// leaseBody is the body of the lease endpoints.
type leaseBody struct {
	LeaseID   string      `json:"lease_id"`
	Increment json.Number `json:"increment"`
	Sync      any         `json:"sync"`
}

// readLeaseBody reads the body and takes lease_id from it, else from the
// path: when both are given the body wins, as in Vault.
func readLeaseBody(w http.ResponseWriter, r *http.Request) (leaseBody, error) {
	var b leaseBody
	if err := decodeBody(w, r, &b); err != nil {
		return b, err
	}
	if b.LeaseID == "" {
		b.LeaseID = r.PathValue("id")
	}
	return b, nil
}

func boolParam(v any, field string) (bool, error) {
	switch t := v.(type) {
	case nil:
		return false, nil
	case bool:
		return t, nil
	case string:
		if t == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(t)
		if err != nil {
			return false, keel.Invalid(field, "must be a boolean")
		}
		return b, nil
	}
	return false, keel.Invalid(field, "must be a boolean")
}

// invalidLease answers an unknown or expired lease as Vault does: 400
// "invalid lease".
func writeLeaseError(w http.ResponseWriter, err error) {
	if keel.KindOf(err) == keel.KindNotFound {
		writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{"invalid lease"}})
		return
	}
	writeError(w, err)
}

func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (h *Handler) leaseLookup(w http.ResponseWriter, r *http.Request) {
	b, err := readLeaseBody(w, r)
	if err == nil && b.LeaseID == "" {
		err = keel.Invalid("lease_id", "missing lease ID")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	l, err := h.leases.Lookup(r.Context(), b.LeaseID)
	if err != nil {
		writeLeaseError(w, err)
		return
	}
	now := h.clock.Now()
	writeJSON(w, http.StatusOK, newResponse(&leaseLookupData{
		ID:              l.ID,
		IssueTime:       rfc3339(l.IssueTime),
		ExpireTime:      rfc3339(l.ExpireTime),
		LastRenewalTime: rfc3339(l.LastRenewalTime),
		Renewable:       l.Renewable,
		TTL:             int64(l.TTL(now) / time.Second),
	}))
}

// leaseLookupData is the data of a lookup. Its members are in the order of
// their names, as encoding/json would write them from a map, and a struct
// costs less to encode than a map.
type leaseLookupData struct {
	ExpireTime      any    `json:"expire_time"`
	ID              string `json:"id"`
	IssueTime       any    `json:"issue_time"`
	LastRenewalTime any    `json:"last_renewal_time"`
	Renewable       bool   `json:"renewable"`
	TTL             int64  `json:"ttl"`
}

func (h *Handler) leaseList(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && !isList(r) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
		return
	}
	keys, err := h.leases.List(r.Context(), r.PathValue("prefix"))
	if err != nil {
		writeError(w, err)
		return
	}
	if len(keys) == 0 {
		writeNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, newResponse(keysData(keys)))
}

func (h *Handler) leaseRenew(w http.ResponseWriter, r *http.Request) {
	b, err := readLeaseBody(w, r)
	if err == nil && b.LeaseID == "" {
		err = keel.Invalid("lease_id", "missing lease ID")
	}
	var inc int64
	if err == nil && b.Increment != "" {
		if inc, err = b.Increment.Int64(); err != nil || inc < 0 {
			err = keel.Invalid("increment", "must be a non-negative number of seconds")
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	ren, err := h.leases.Renew(r.Context(), b.LeaseID, time.Duration(inc)*time.Second)
	if err != nil {
		writeLeaseError(w, err)
		return
	}
	resp := newResponse(nil)
	resp.LeaseID, resp.Renewable = ren.Lease.ID, ren.Lease.Renewable
	resp.LeaseDuration = int64(ren.TTL / time.Second)
	if len(ren.Warnings) > 0 {
		resp.Warnings = ren.Warnings
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *Handler) leaseRevoke(w http.ResponseWriter, r *http.Request) {
	b, err := readLeaseBody(w, r)
	if err == nil && b.LeaseID == "" {
		err = keel.Invalid("lease_id", "missing lease ID")
	}
	var sync bool
	if err == nil {
		sync, err = boolParam(b.Sync, "sync")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.leases.Revoke(r.Context(), b.LeaseID, sync); err != nil {
		writeLeaseError(w, err)
		return
	}
	writeRevoked(w, sync)
}

// writeRevoked answers a revocation: 204 once done, 202 when queued.
func writeRevoked(w http.ResponseWriter, sync bool) {
	if sync {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *Handler) leaseRevokePrefix(w http.ResponseWriter, r *http.Request) {
	var b leaseBody
	err := decodeBody(w, r, &b)
	var sync bool
	if err == nil {
		sync, err = boolParam(b.Sync, "sync")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.leases.RevokePrefix(r.Context(), r.PathValue("prefix"), sync); err != nil {
		writeError(w, err)
		return
	}
	writeRevoked(w, sync)
}

func (h *Handler) leaseRevokeForce(w http.ResponseWriter, r *http.Request) {
	if err := h.leases.RevokeForce(r.Context(), r.PathValue("prefix")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) leaseTidy(w http.ResponseWriter, r *http.Request) {
	if _, err := h.leases.Tidy(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// irrevocableQuery reads the query of the count and list endpoints.
func irrevocableQuery(r *http.Request) (children bool, err error) {
	q := r.URL.Query()
	var v keel.Validation
	switch t := q.Get("type"); t {
	case "irrevocable":
	case "":
		v.Add("type", "missing type")
	default:
		v.Add("type", "unsupported type %q: only \"irrevocable\" is supported", t)
	}
	if s := q.Get("include_child_namespaces"); s != "" {
		if children, err = strconv.ParseBool(s); err != nil {
			v.Add("include_child_namespaces", "must be a boolean")
		}
	}
	return children, v.Err()
}

func (h *Handler) leaseCount(w http.ResponseWriter, r *http.Request) {
	children, err := irrevocableQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	c, err := h.leases.CountIrrevocable(r.Context(), children)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{"counts": h.byAccessor(c.ByMount), "lease_count": c.Total}))
}

func (h *Handler) leaseIrrevocable(w http.ResponseWriter, r *http.Request) {
	children, err := irrevocableQuery(r)
	limit := 0
	if err == nil {
		switch s := r.URL.Query().Get("limit"); {
		case s == "":
		case strings.EqualFold(s, "none"):
			limit = -1
		default:
			if limit, err = strconv.Atoi(s); err != nil || limit <= 0 {
				err = keel.Invalid("limit", "must be a positive number or \"none\"")
			}
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	list, err := h.leases.ListIrrevocable(r.Context(), children, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	leases := make([]map[string]string, len(list.Leases))
	for i, l := range list.Leases {
		leases[i] = map[string]string{"lease_id": l.LeaseID, "mount_id": h.accessor(l.Mount), "error": l.Error}
	}
	resp := newResponse(map[string]any{"lease_count": list.Total, "leases": leases})
	if len(list.Warnings) > 0 {
		resp.Warnings = list.Warnings
	}
	writeJSON(w, http.StatusOK, resp)
}

// accessor names a lease mount by the accessor of the mount table's entry,
// as Vault's mount_id; a mount the table does not hold keeps its path.
func (h *Handler) accessor(mount string) string {
	if m, rest, ok := h.mounts.Route(mount); ok && rest == "" {
		return m.Accessor
	}
	return mount
}

func (h *Handler) byAccessor(byMount map[string]int) map[string]int {
	out := make(map[string]int, len(byMount))
	for mount, n := range byMount {
		out[h.accessor(mount)] += n
	}
	return out
}
