package ldapengine

// Flavor says which of the two engines an Engine is.
type Flavor string

// The flavors.
const (
	// FlavorLDAP is Vault's ldap engine: it also has userdn, userattr,
	// upndomain, connection_timeout and last_password.
	FlavorLDAP Flavor = "ldap"
	// FlavorOpenLDAP is Vault's openldap engine; it refuses the ldap-only
	// settings.
	FlavorOpenLDAP Flavor = "openldap"
)

// features are what a flavor offers: the one table of how the two engines
// differ, consulted wherever they do.
type features struct {
	// userSettings: Config's UserDN, UserAttr, UPNDomain and
	// ConnectionTimeout are accepted and defaulted; without them they are
	// refused.
	userSettings bool
	// roleByUsername: a static role may name its account by username
	// alone, found under UserDN; without it the role needs a DN.
	roleByUsername bool
	// lastPassword: a static credential reports the password before the
	// last rotation.
	lastPassword bool
	// dynamicCreds: dynamic roles issue credentials (Vault's creds/NAME).
	dynamicCreds bool
	// librarySets: library sets lend service accounts.
	librarySets bool
}

// features returns f's features; ok is false for an unknown flavor.
func (f Flavor) features() (_ features, ok bool) {
	switch f {
	case FlavorLDAP:
		return features{userSettings: true, roleByUsername: true, lastPassword: true, dynamicCreds: true, librarySets: true}, true
	case FlavorOpenLDAP:
		return features{}, true
	}
	return features{}, false
}
