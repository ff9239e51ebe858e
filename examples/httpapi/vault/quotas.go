package vault

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

// quotaRoutes are Vault's sys/quotas/lease-count endpoints, served by the
// lease.Manager's quotas.
func (h *Handler) quotaRoutes() []route {
	const quotas = "/v1/sys/quotas/lease-count"
	list := listing(mountSystem, "LIST", h.quotaNames)
	return []route{
		{"GET", quotas + "/{name}", h.readQuota},
		{"POST PUT", quotas + "/{name}", h.writeQuota},
		{"DELETE", quotas + "/{name}", func(w http.ResponseWriter, r *http.Request) {
			err := h.leases.DeleteQuota(r.Context(), r.PathValue("name"))
			if keel.KindOf(err) == keel.KindNotFound {
				err = nil // Vault deletes a missing quota with 204
			}
			writeDone(w, err)
		}},
		{"LIST GET", quotas, list},
		{"LIST GET", quotas + "/{$}", list},
	}
}

// quotaFields are the fields of a lease-count quota write Vault knows;
// anything else is refused, naming it.
var quotaFields = []string{"name", "path", "max_leases", "role", "inheritable"}

func (h *Handler) quotaNames(ctx context.Context) ([]string, error) {
	qs, err := h.leases.ListQuotas(ctx)
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	return names, err
}

// quotaData is a lease-count quota as Vault reads it, members in the order
// of their names.
type quotaData struct {
	Counter     int    `json:"counter"`
	Inheritable bool   `json:"inheritable"`
	MaxLeases   int    `json:"max_leases"`
	Name        string `json:"name"`
	Path        string `json:"path"`
	Role        string `json:"role"`
	Type        string `json:"type"`
}

func (h *Handler) readQuota(w http.ResponseWriter, r *http.Request) {
	q, err := h.leases.GetQuota(r.Context(), r.PathValue("name"))
	writeData(w, missing(err), newResponse(mountSystem, &quotaData{
		Counter: q.Leases, MaxLeases: q.MaxLeases, Name: q.Name, Path: q.Path, Type: "lease-count",
	}))
}

// writeQuota creates or updates a lease-count quota: on an update, a path
// or max_leases the body does not give keeps its value, as Vault's.
func (h *Handler) writeQuota(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	type input struct {
		path      *string
		maxLeases *int
	}
	in, err := readBody(w, r, func(f *fields) input {
		for _, k := range slices.Sorted(maps.Keys(f.m)) {
			if !slices.Contains(quotaFields, k) {
				f.v.Add(k, "is not a field of a lease count quota")
			}
		}
		if f.str("role") != "" {
			f.v.Add("role", "roles restrict the logins of auth mounts, which keel does not serve")
		}
		if f.boolean("inheritable") {
			f.v.Add("inheritable", "keel has no namespaces to inherit a quota")
		}
		return input{path: opt(f, "path", f.str), maxLeases: opt(f, "max_leases", f.integer)}
	})
	if err != nil {
		writeError(w, err)
		return
	}
	req := lease.QuotaRequest{Name: name}
	old, err := h.leases.GetQuota(ctx, name)
	switch {
	case err == nil:
		req.Path, req.MaxLeases = old.Path, old.MaxLeases
	case keel.KindOf(err) != keel.KindNotFound:
		writeError(w, err)
		return
	}
	if in.path != nil {
		req.Path = *in.path
	}
	if in.maxLeases != nil {
		req.MaxLeases = *in.maxLeases
	}
	_, err = h.leases.PutQuota(ctx, req)
	writeDone(w, err)
}

// quotaExceeded is Vault's answer to a request refused by a lease-count
// quota (a *lease.QuotaError anywhere in err): 429, its message in
// Vault's multierror wording, followed by the quota's name, its maximum
// and its path (Vault names none); nil for any other error.
func quotaExceeded(err error) *vaultError {
	var qe *lease.QuotaError
	if !errors.As(err, &qe) {
		return nil
	}
	return &vaultError{http.StatusTooManyRequests, []string{
		"1 error occurred:\n\t* request path " + strconv.Quote(qe.LeasePath) + ": lease count quota exceeded (quota " + strconv.Quote(qe.Name) + ", max_leases " + strconv.Itoa(qe.Max) + ", path " + strconv.Quote(qe.Path) + ")\n\n"}}
}
