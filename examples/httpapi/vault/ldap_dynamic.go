package vault

import (
	"net/http"
	"time"

	"github.com/keelhq/keel/ldapengine"
)

// serveLDAPDynamic answers the dynamic role paths of an ldap or openldap
// mount: section is "role" or "creds", name the rest of the path.
//
//	LIST               role
//	GET, POST, DELETE  role/:name
//	GET                creds/:name   (ldap only)
func (h *Handler) serveLDAPDynamic(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, section, name string) {
	ctx := r.Context()
	write := r.Method == http.MethodPost || r.Method == http.MethodPut
	switch {
	case section == "role" && name == "":
		if !isList(r) {
			methodNotAllowed(w, "LIST")
			return
		}
		names, err := eng.ListDynamicRoles(ctx)
		writeList(w, names, err)
	case section == "role":
		switch {
		case write:
			f, ok := readFields(w, r)
			if !ok {
				return
			}
			// Only the keys sent change: a nil field is left as it is.
			var req ldapengine.DynamicRoleRequest
			for k, p := range map[string]**string{
				"creation_ldif": &req.CreationLDIF, "deletion_ldif": &req.DeletionLDIF,
				"rollback_ldif": &req.RollbackLDIF, "username_template": &req.UsernameTemplate,
			} {
				if f.has(k) {
					s := f.str(k)
					*p = &s
				}
			}
			for k, p := range map[string]**time.Duration{"default_ttl": &req.DefaultTTL, "max_ttl": &req.MaxTTL} {
				if f.has(k) {
					d := f.duration(k)
					*p = &d
				}
			}
			if err := f.v.Err(); err != nil {
				writeError(w, err)
				return
			}
			writeDone(w, eng.PutDynamicRole(ctx, name, req))
		case r.Method == http.MethodGet:
			role, err := eng.DynamicRole(ctx, name)
			writeRead(w, err, func() any {
				return map[string]any{
					"creation_ldif":     role.CreationLDIF,
					"deletion_ldif":     role.DeletionLDIF,
					"rollback_ldif":     role.RollbackLDIF,
					"username_template": role.UsernameTemplate,
					"default_ttl":       seconds(role.DefaultTTL),
					"max_ttl":           seconds(role.MaxTTL),
				}
			})
		case r.Method == http.MethodDelete:
			writeDone(w, eng.DeleteDynamicRole(ctx, name))
		default:
			methodNotAllowed(w, "GET, POST, PUT, DELETE")
		}
	case section == "creds" && name != "":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		cred, err := eng.Creds(ctx, name)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, leasedResponse(cred.Lease, map[string]any{
			"username":            cred.Username,
			"password":            cred.Password,
			"distinguished_names": cred.DistinguishedNames,
		}))
	default:
		writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"unsupported path"}})
	}
}
