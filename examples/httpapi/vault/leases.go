package vault

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
)

// leaseRequest reads the body of a lease endpoint, its other fields with
// more, and returns the lease id: the body's lease_id, else the path's
// (the body wins, as in Vault); Vault's "lease_id must be specified" when
// neither has one.
func leaseRequest(w http.ResponseWriter, r *http.Request, more func(*fields)) (string, error) {
	id, err := readBody(w, r, func(f *fields) string {
		more(f)
		if id := f.str("lease_id"); id != "" {
			return id
		}
		return r.PathValue("id")
	})
	if err == nil && id == "" {
		err = errNoLeaseID
	}
	return id, err
}

// errNoLeaseID is Vault's answer to a lease request without a lease id.
var errNoLeaseID = &vaultError{http.StatusBadRequest, []string{"lease_id must be specified"}}

// invalidLease is err, or for an unknown or expired lease Vault's 400
// "invalid lease".
func invalidLease(err error) error {
	if keel.KindOf(err) == keel.KindNotFound {
		return &vaultError{http.StatusBadRequest, []string{"invalid lease"}}
	}
	return err
}

// writeQueued answers a revocation: the error, 204 once done, 202 when
// queued.
func writeQueued(w http.ResponseWriter, done bool, err error) {
	if err == nil && !done {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeDone(w, err)
}

func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// leaseLookupData is the data of a lookup. Its members are in the order of
// their names, as encoding/json would write them from a map, and a struct
// costs less to encode than a map. The revocation members, keel's, are
// there only once a revocation of the lease has failed.
type leaseLookupData struct {
	ExpireTime        any    `json:"expire_time"`
	ID                string `json:"id"`
	IssueTime         any    `json:"issue_time"`
	LastRenewalTime   any    `json:"last_renewal_time"`
	NextRevokeAttempt any    `json:"next_revoke_attempt,omitempty"`
	Renewable         bool   `json:"renewable"`
	RevokeAttempts    int    `json:"revoke_attempts,omitempty"`
	RevokeError       string `json:"revoke_error,omitempty"`
	TTL               int64  `json:"ttl"`
}

func (h *Handler) leaseLookup(w http.ResponseWriter, r *http.Request) {
	id, err := leaseRequest(w, r, func(*fields) {})
	var l lease.Lease
	if err == nil {
		l, err = h.leases.Get(r.Context(), id)
	}
	data := &leaseLookupData{
		ID: l.ID, IssueTime: rfc3339(l.IssueTime), ExpireTime: rfc3339(l.ExpireTime),
		LastRenewalTime: rfc3339(l.LastRenewalTime), Renewable: l.Renewable, TTL: seconds(l.TTL(h.clock.Now())),
	}
	if l.Attempts > 0 {
		data.RevokeAttempts, data.RevokeError, data.NextRevokeAttempt = l.Attempts, l.LastError, rfc3339(l.NextAttempt)
	}
	writeData(w, invalidLease(err), newResponse(mountSystem, data))
}

// leaseRenew answers sys/leases/renew: increment as keel.ParseDuration
// reads it, as Vault's; data is what the engine answered (a kv secret
// read anew).
func (h *Handler) leaseRenew(w http.ResponseWriter, r *http.Request) {
	var inc time.Duration
	id, err := leaseRequest(w, r, func(f *fields) { inc = f.duration("increment") })
	var ren lease.Renewal
	if err == nil {
		ren, err = h.leases.Renew(r.Context(), id, inc)
	}
	resp := leasedResponse(mountSystem, ren.Lease.ID, ren.Lease.Renewable, ren.TTL, ren.Data)
	if ren.Capped {
		resp.Warnings = []string{cappedWarning(ren.Requested, ren.TTL)}
	}
	writeData(w, invalidLease(err), resp)
}

// cappedWarning is Vault's warning of a renewal whose TTL asked for was
// capped at what the max TTL left.
func cappedWarning(requested, granted time.Duration) string {
	return "TTL of " + strconv.Quote(vaultDuration(requested)) + " exceeded the effective max_ttl of " +
		strconv.Quote(vaultDuration(granted)) + "; TTL value is capped accordingly"
}

// vaultDuration prints d as Vault's warnings do: in whole seconds, in Go's
// form without its zero minutes and seconds ("768h", "1h30s", "2m"), "0s"
// for zero.
func vaultDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	s := d.String()
	if d == 0 {
		return s
	}
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if i := strings.Index(s, "h0m"); i > 0 {
		s = s[:i+1] + s[i+3:]
	}
	return s
}

// leaseRevoke answers sys/leases/revoke: 202 once queued, 204 once done
// (sync), for an id that names no lease too, as Vault's.
func (h *Handler) leaseRevoke(w http.ResponseWriter, r *http.Request) {
	var sync bool
	id, err := leaseRequest(w, r, func(f *fields) { sync = f.boolean("sync") })
	if err == nil {
		err = h.leases.Revoke(r.Context(), id, sync)
	}
	writeQueued(w, sync, invalidLease(err))
}

// tidyStarted is Vault's warning of sys/leases/tidy.
const tidyStarted = "Tidy operation successfully started. Any information from the operation will be printed to Vault's server logs."

// leaseTidy answers sys/leases/tidy as Vault's: 202 with its warning.
// keel's tidy has run when it answers (Vault's runs in the background);
// an error is answered as an error.
func (h *Handler) leaseTidy(w http.ResponseWriter, r *http.Request) {
	if _, err := h.leases.Tidy(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	resp := newResponse(mountSystem, nil)
	resp.Warnings = []string{tidyStarted}
	writeJSON(w, http.StatusAccepted, resp)
}

func (h *Handler) leaseRevokePrefix(w http.ResponseWriter, r *http.Request) {
	sync, err := readBody(w, r, func(f *fields) bool { return f.boolean("sync") })
	if err == nil {
		err = h.leases.RevokePrefix(r.Context(), r.PathValue("prefix"), sync)
	}
	writeQueued(w, sync, err)
}

// irrevocableQuery checks the query of the count and list endpoints. Its
// include_child_namespaces must be a boolean, and changes nothing: keel
// has no namespaces.
func irrevocableQuery(r *http.Request) error {
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
		if _, err := strconv.ParseBool(s); err != nil {
			v.Add("include_child_namespaces", "must be a boolean")
		}
	}
	return v.Err()
}

func (h *Handler) leaseCount(w http.ResponseWriter, r *http.Request) {
	if err := irrevocableQuery(r); err != nil {
		writeError(w, err)
		return
	}
	c, err := h.leases.CountIrrevocable(r.Context())
	counts := make(map[string]int, len(c.ByMount))
	for mount, n := range c.ByMount {
		counts[h.accessor(mount)] += n
	}
	writeData(w, err, newResponse(mountSystem, map[string]any{"counts": counts, "lease_count": c.Total}))
}

// tooManyIrrevocable is Vault's warning of sys/leases when more
// irrevocable leases exist than its limit. It names the CLI's flag; the
// HTTP API's way is the limit "none".
const tooManyIrrevocable = "Command halted because many irrevocable leases were found. To emit the entire list, re-run the command with force set true."

// vaultIrrevocableLimit is the limit of Vault's sys/leases when its query
// gives none.
const vaultIrrevocableLimit = 10000

// leaseIrrevocable answers sys/leases: limit n is the first page of n
// leases (cut, with Vault's warning, when the page has a Next), "none"
// every page, none given vaultIrrevocableLimit.
func (h *Handler) leaseIrrevocable(w http.ResponseWriter, r *http.Request) {
	err := irrevocableQuery(r)
	limit, all := vaultIrrevocableLimit, false
	if err == nil {
		switch s := r.URL.Query().Get("limit"); {
		case s == "":
		case strings.EqualFold(s, "none"):
			all = true
		default:
			if limit, err = strconv.Atoi(s); err != nil || limit <= 0 {
				err = keel.Invalid("limit", "must be a positive number or \"none\"")
			}
		}
	}
	var list []lease.IrrevocableLease
	truncated := false
	switch {
	case err != nil:
	case all:
		for l, lerr := range keel.All(r.Context(), 0, h.leases.ListIrrevocable) {
			if err = lerr; err != nil {
				break
			}
			list = append(list, l)
		}
	default:
		var p keel.Page[lease.IrrevocableLease]
		p, err = h.leases.ListIrrevocable(r.Context(), keel.ListRequest{Limit: limit})
		list, truncated = p.Items, p.Next != ""
	}
	leases := make([]map[string]string, len(list))
	for i, l := range list {
		leases[i] = map[string]string{"lease_id": l.LeaseID, "mount_id": h.accessor(l.Mount), "error": l.Error}
	}
	resp := newResponse(mountSystem, map[string]any{"lease_count": len(list), "leases": leases})
	if truncated {
		resp.Warnings = []string{tooManyIrrevocable}
	}
	writeData(w, err, resp)
}

// leaseList answers LIST sys/leases/lookup/:prefix as Vault's: every name
// under prefix at once, walking the pages of lease.Manager.List.
func (h *Handler) leaseList(ctx context.Context, prefix string) ([]string, error) {
	keys := []string{}
	for name, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return h.leases.List(ctx, prefix, r)
	}) {
		if err != nil {
			return nil, err
		}
		keys = append(keys, name)
	}
	return keys, nil
}

// accessor names a lease mount by the accessor of the mount table's entry,
// as Vault's mount_id; a mount the table does not hold keeps its path.
func (h *Handler) accessor(mount string) string {
	if m, rest, ok := h.mounts.Route(mount); ok && rest == "" {
		return m.Accessor
	}
	return mount
}
