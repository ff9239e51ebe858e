// Package ldapengine implements the ldap and openldap secrets engines of
// Vault: a bind configuration per mount, root password rotation, static
// roles whose directory password rotates on a schedule, and password
// policies (Vault's sys/policies/password).
//
// # Basics
//
// New makes the engine of one mount with its Flavor: FlavorLDAP or
// FlavorOpenLDAP. The openldap flavor refuses the ldap-only settings
// (userdn, userattr, upndomain, connection_timeout) and never returns
// last_password. The directory is reached through the small Directory
// interface: LDAP (github.com/go-ldap/ldap/v3) for real servers,
// FakeDirectory for tests. Passwords are changed with the Password Modify
// extended operation for schema openldap (so that slapd stores a hash), a
// replace of unicodePwd for ad and of racfPassword for racf.
//
// Passwords are 64 letters and digits from crypto/rand, or Config.Length of
// them, or generated from the PasswordPolicies entry that
// Config.PasswordPolicy names.
//
// Rotation never loses a password: the new password is written to the
// store (a write-ahead record, and the role is rescheduled for a retry)
// before the directory changes, and the role takes it after; a pending
// record is reused by the next attempt. Start runs a worker that calls
// Step, which reads the store's due index in time order up to the first
// role not yet due.
//
// # Errors
//
// Errors wrap the kinds of package keel: keel.ErrInvalid (with the wire
// field, see keel.FieldErrors) for broken rules, keel.ErrNotFound for a
// missing role, configuration or password policy, keel.ErrConflict for an
// entry already managed by another role, keel.ErrUnavailable for a
// directory that cannot be reached or refuses a request,
// keel.ErrUnauthenticated for a refused bind.
//
// # Rights
//
// Each operation asks the Authorizer of Options for the capability on
// "MOUNT/config", "MOUNT/rotate-root", "MOUNT/static-role/NAME" (create or
// update, decided inside the transaction), "MOUNT/static-cred/NAME",
// "MOUNT/rotate-role/NAME", and "sys/policies/password/NAME".
//
// # Concurrency
//
// Engine and PasswordPolicies are safe for concurrent use. Rotations of one
// Engine run one at a time; across processes, Options.Leader keeps one
// worker, and the write-ahead record makes concurrent rotations of one role
// set the same password.
//
// # Caveats
//
// Choices where the spec says "not shown", following Vault's engines:
// writing the configuration replaces it as a whole, but an empty bindpass
// keeps the stored one (a rotated root password is not known to anyone);
// the configuration must exist before a static role is created; a static
// role whose first rotation fails is kept and retried (Vault deletes it),
// so that a password the directory may already hold is never lost;
// tls_min_version and tls_max_version default to tls12; a password
// policy's length is 4 to 100. Between a directory change and the commit
// that follows, static-cred still returns the previous password.
// Dynamic roles and library sets are not implemented yet.
package ldapengine
