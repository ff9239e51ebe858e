package vault

import (
	"net/http"

	"github.com/keelhq/keel/ldapengine"
)

// serveLDAPLibrary answers the library set paths of an ldap mount: rest is
// the path after "library/" (empty for the list).
func (h *Handler) serveLDAPLibrary(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, rest string) {
	writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"unsupported path"}})
}
