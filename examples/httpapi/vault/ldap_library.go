package vault

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/lease"
)

// serveLDAPLibrary answers the library set paths of an ldap mount: rest is
// the path after "library/" (empty for the list).
//
//	LIST        library
//	GET, POST, DELETE  library/:set
//	GET         library/:set/status
//	POST        library/:set/check-out
//	POST        library/:set/check-in
//	POST        library/manage/:set/check-in
func (h *Handler) serveLDAPLibrary(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, rest string) {
	ctx := r.Context()
	write := r.Method == http.MethodPost || r.Method == http.MethodPut
	parts := strings.Split(rest, "/")
	switch {
	case rest == "":
		if !isList(r) {
			methodNotAllowed(w, "LIST")
			return
		}
		names, err := eng.ListLibrarySets(ctx)
		writeList(w, names, err)
	case len(parts) == 1:
		set := parts[0]
		switch {
		case write:
			f, ok := readFields(w, r)
			if !ok {
				return
			}
			req := ldapengine.LibrarySetRequest{ServiceAccountNames: f.strList("service_account_names")}
			if f.has("ttl") {
				d := f.duration("ttl")
				req.TTL = &d
			}
			if f.has("max_ttl") {
				d := f.duration("max_ttl")
				req.MaxTTL = &d
			}
			if f.has("disable_check_in_enforcement") {
				b := f.boolean("disable_check_in_enforcement")
				req.DisableCheckInEnforcement = &b
			}
			if err := f.v.Err(); err != nil {
				writeError(w, err)
				return
			}
			writeDone(w, eng.PutLibrarySet(ctx, set, req))
		case r.Method == http.MethodGet:
			s, err := eng.LibrarySet(ctx, set)
			writeRead(w, err, func() any {
				return map[string]any{
					"service_account_names":        s.ServiceAccountNames,
					"ttl":                          seconds(s.TTL),
					"max_ttl":                      seconds(s.MaxTTL),
					"disable_check_in_enforcement": s.DisableCheckInEnforcement,
				}
			})
		case r.Method == http.MethodDelete:
			writeDone(w, eng.DeleteLibrarySet(ctx, set))
		default:
			methodNotAllowed(w, "GET, POST, PUT, DELETE")
		}
	case len(parts) == 2 && parts[1] == "status":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		st, err := eng.LibraryStatus(ctx, parts[0])
		writeRead(w, err, func() any {
			out := make(map[string]any, len(st))
			for name, a := range st {
				m := map[string]any{"available": a.Available}
				if !a.Available {
					m["borrower_client_token"] = a.BorrowerClientToken
					m["borrower_entity_id"] = a.BorrowerEntityID
				}
				out[name] = m
			}
			return out
		})
	case len(parts) == 2 && parts[1] == "check-out":
		if !write {
			methodNotAllowed(w, "POST, PUT")
			return
		}
		f, ok := readFields(w, r)
		if !ok {
			return
		}
		ttl := f.duration("ttl")
		if err := f.v.Err(); err != nil {
			writeError(w, err)
			return
		}
		co, err := eng.CheckOut(ctx, parts[0], ttl)
		if errors.Is(err, ldapengine.ErrNoAccountAvailable) {
			// Vault answers a set with no free account with 400.
			writeJSON(w, http.StatusBadRequest, errorBody{Errors: []string{err.Error()}})
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		resp := leasedResponse(co.Lease, map[string]any{
			"service_account_name": co.ServiceAccountName,
			"password":             co.Password,
		})
		writeJSON(w, http.StatusOK, resp)
	case len(parts) == 2 && parts[1] == "check-in", len(parts) == 3 && parts[0] == "manage" && parts[2] == "check-in":
		if !write {
			methodNotAllowed(w, "POST, PUT")
			return
		}
		manage := len(parts) == 3
		set := parts[0]
		if manage {
			set = parts[1]
		}
		f, ok := readFields(w, r)
		if !ok {
			return
		}
		names := f.strList("service_account_names")
		if err := f.v.Err(); err != nil {
			writeError(w, err)
			return
		}
		done, err := eng.CheckIn(ctx, set, names, manage)
		if err != nil {
			writeError(w, err)
			return
		}
		if done == nil {
			done = []string{}
		}
		writeJSON(w, http.StatusOK, newResponse(map[string]any{"check_ins": done}))
	default:
		writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"unsupported path"}})
	}
}

// leasedResponse is Vault's envelope of a secret with the lease l: its id,
// renewable flag and duration in seconds.
func leasedResponse(l lease.Lease, data any) *response {
	resp := newResponse(data)
	resp.LeaseID = l.ID
	resp.Renewable = l.Renewable
	resp.LeaseDuration = int64(l.ExpireTime.Sub(l.IssueTime) / time.Second)
	return resp
}
