package vault

import (
	"net/http"

	"github.com/keelhq/keel/ldapengine"
)

// serveLDAPDynamic answers the dynamic role paths of an ldap or openldap
// mount: section is "role" or "creds", name the rest of the path.
func (h *Handler) serveLDAPDynamic(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, section, name string) {
	writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"unsupported path"}})
}
