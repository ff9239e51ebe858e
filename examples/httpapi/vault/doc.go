// Package vault is a thin HTTP adapter that speaks HashiCorp Vault's wire
// format for keel's key-value engines (package kv) and lease manager
// (package lease), so that Vault's official Go client (and curl recipes
// written for Vault) work against a keel program.
//
// # Basics
//
// New serves a mount.Table (package mount holds the table, its rules, the
// engines, the lease manager and the removal of mounts; the adapter only
// decodes and encodes); Register adds the routes to an http.ServeMux:
//
//	GET            /v1/sys/mounts                   list mounts
//	POST, PUT      /v1/sys/mounts/:path             enable a kv version 1, ldap or openldap engine
//	DELETE         /v1/sys/mounts/:path             disable it: revoke its leases, delete its data
//	PUT, POST      /v1/sys/leases/lookup            lease_id in the body
//	LIST           /v1/sys/leases/lookup/:prefix    (or GET with list=true); needs sudo
//	PUT, POST      /v1/sys/leases/renew[/:id]       lease_id, increment
//	PUT, POST      /v1/sys/leases/revoke[/:id]      lease_id, sync
//	PUT, POST      /v1/sys/leases/revoke-prefix/:p  sync; needs sudo
//	PUT, POST      /v1/sys/leases/revoke-force/:p   needs sudo
//	PUT, POST      /v1/sys/leases/tidy
//	GET            /v1/sys/leases/count             type=irrevocable, include_child_namespaces
//	GET            /v1/sys/leases                   type=irrevocable, include_child_namespaces, limit
//	any            /v1/:mount/:path                 kv read (GET), list (LIST or GET list=true),
//	                                                write (POST, PUT), delete (DELETE)
//
// with Options.Groups, the identity groups (package identity):
//
//	POST, PUT          /v1/identity/group             create, or update by id (in the body) or name
//	GET, POST, DELETE  /v1/identity/group/id/:id      read, update (POST, PUT), delete
//	GET, POST, DELETE  /v1/identity/group/name/:name  read, create or update (POST, PUT), delete
//	LIST               /v1/identity/group/id, …/name  list ids, names (or GET with list=true)
//
// and for the directory engines (package ldapengine), at ldap/ and
// openldap/ and any mount of type ldap or openldap (creds and library only
// on mounts of type ldap, written ldap-mount; every POST is also a PUT):
//
//	POST, GET, DELETE  /v1/:mount/config                POST merges; GET never shows bindpass nor client_tls_key
//	POST               /v1/:mount/rotate-root
//	LIST               /v1/:mount/static-role           (or GET with list=true)
//	GET, POST, DELETE  /v1/:mount/static-role/:name
//	GET                /v1/:mount/static-cred/:name
//	POST               /v1/:mount/rotate-role/:name
//	LIST               /v1/:mount/role                  dynamic roles (or GET with list=true)
//	GET, POST, DELETE  /v1/:mount/role/:name            POST updates only the keys sent
//	GET                /v1/ldap-mount/creds/:name       dynamic credentials with a lease
//	LIST               /v1/ldap-mount/library           library sets
//	GET, POST, DELETE  /v1/ldap-mount/library/:set
//	GET                /v1/ldap-mount/library/:set/status
//	POST               /v1/ldap-mount/library/:set/check-out   400 when no account is free
//	POST               /v1/ldap-mount/library/:set/check-in
//	POST               /v1/ldap-mount/library/manage/:set/check-in
//	POST, GET, DELETE  /v1/sys/policies/password/:name  {"policy": HCL} (LIST sys/policies/password)
//	GET                /v1/sys/policies/password/:name/generate
//
// Durations are answered in seconds, times in RFC 3339. The example server
// opens its table with mount.VaultDefaults: the first start creates
// "secret/" (kv version 1), "ldap/" and "openldap/", as a Vault development
// server with those engines enabled would. Mount options are "version"
// (only "1") and "leased_passthrough" ("true": every read issues a
// renewable lease of the secret's ttl). A refused mount answers 400 naming
// the field and stores nothing; unmounting revokes the mount's leases and
// deletes its data, resuming after a crash (see package mount).
//
// The caller must be in the request's context (keel.WithPrincipal) before
// the handler runs: the adapter reads no token. In the example server a
// middleware maps the X-Secrets-Token header to a principal.
//
// # Status codes
//
// As Vault: 200 with a body; 204 without one (writes, deletes, sync
// revocations); 202 for queued revocations and tidy; 404 with
// {"errors":[]} for a missing secret or an empty listing; 400
// {"errors":["invalid lease"]} for an unknown or expired lease; 400 for an
// invalid request, with one message per broken rule, "wire_name: rule"
// ("lease_id: lease expired", "member_group_ids: cyclic relationship
// detected for member group ID …"; the rule alone when it concerns the
// request as a whole, as "missing data fields"); 403
// {"errors":["permission denied"]}; 413 for a body over 32 MiB. Error
// kinds map to statuses in one table (statusOf). Identity groups: every
// write answers 200 with data {id, name}, as the service's document states
// for creates and updates alike (Vault answers an update with 204); an
// update of an unknown id answers 400 "invalid group ID", an empty name 400
// "empty group name"; a delete answers 204, the group existing or not.
//
// # Field names
//
// keel names the field of a broken rule by its Go path in the operation's
// input (keel.FieldError: "MemberGroupIDs", "ServiceAccountNames[2]",
// Data["ttl"]); the adapter answers with Vault's wire names, translated in
// one table (wireNames, applied by wirePath when an error is answered):
// each name maps to its wire name (BindDN to binddn, LeaseID to lease_id;
// a name not in the table is lower-cased), slice indices are dropped
// (Vault's lists are flat: service_account_names), map keys are kept
// (options.version), and kv's data map is the body itself (ttl). The
// adapter's own problems with the body name the wire keys they read,
// which the table leaves as they are.
//
// # Directory engines
//
// Where document 3 is silent, the ldap and openldap mounts answer as Vault
// 1.21's openldap plugin does:
//
//   - A config write merges into the stored configuration: only the keys
//     sent change (POST {"request_timeout": "30s"} keeps url, userdn,
//     userattr…); a bindpass that is absent or empty keeps the stored
//     one, so a rotated root password need not be known.
//   - A config read returns every member of Vault's, with Vault's
//     defaults: groupdn, groupfilter, groupattr, userfilter,
//     deny_null_bind, discoverdn, use_token_groups,
//     anonymous_group_search, username_as_alias, dereference_aliases,
//     max_page_size, enable_samaccountname_login, case_sensitive_names,
//     credential_type, skip_static_role_import_rotation, rotation_period,
//     rotation_schedule, rotation_window, disable_automated_rotation;
//     use_pre111_group_cn_behavior once written, and
//     last_bind_password_rotation after a rotate-root. The group, filter
//     and login settings are stored and read back without effect, as in
//     Vault's secrets engine (they serve its LDAP auth method), so that
//     infrastructure-as-code tools read back what they wrote.
//   - skip_static_role_import_rotation is the default of a static role's
//     skip_import_rotation.
//   - Role and library set names are hierarchical ("team/app"), and LIST
//     of a sub-path (static-role/team, role/team, library/team) shows one
//     level, folders ending in "/"; library actions follow the name
//     (library/team/app/check-out, library/manage/team/app/check-in).
//   - A static role whose dn or username does not resolve in the
//     directory is refused (400 naming the field) and not stored.
//   - A lease whose revocation failed (a deletion LDIF the directory
//     refuses) stays visible to sys/leases/lookup, expired, until a
//     revocation succeeds; a sync revocation answers the directory's
//     refusal as 400.
//   - Static roles and static credentials return last_vault_rotation,
//     Vault's name, beside the spec's last_secrets_rotation (the same
//     time).
//   - An entry already managed by a static role, or an account already in
//     a library set, is refused with 400, as Vault refuses it.
//   - An error that carries a retry hint answers a Retry-After header, in
//     whole seconds: static-cred while the outcome of a password change is
//     being settled (503), whatever the endpoint.
//
// Where keel still answers otherwise than Vault, and why:
//
//	what                               Vault                          keel, and why
//	config write without length        forgets a stored length        keeps it, as every key of a merge; moving from length
//	                                                                  to password_policy takes "length": 0 in the same write
//	config write of url                lower-cases it                 stores it as written: keel does not rewrite values
//	config write of an empty value     stores "" for some keys        the default, e.g. for groupfilter (ldapengine.Config:
//	                                                                  a zero field is the default)
//	credential_type "phrase"           manages RACF password phrases  400: keel changes passwords only
//	rotation_period, rotation_schedule registers a rotation job       400 unless zero or empty: keel rotates the bind
//	  rotation_window in config        (Vault Enterprise)             password on rotate-root only
//	config read on openldap mounts     userdn, userattr, upndomain,   absent: document 3 makes them ldap-only
//	                                   connection_timeout
//	config read of length              only when set                  always, 64 by default (document 3)
//	config read of password_policy     only when set                  always, "" when unset
//	config read of client_tls_cert     absent                         returned: a certificate, not a secret
//	timestamps                         server's zone, nanoseconds     UTC; last_secrets_rotation and last_vault_rotation
//	                                                                  in whole seconds (RFC 3339)
//	static-cred while a password       the stored password, which     503 with Retry-After until the engine has settled
//	  change's outcome is unknown      may not bind                   it (ldapengine's "Outages")
//	a static role whose first          deleted                        kept and retried: the directory may already hold
//	  rotation fails                                                  the new password
//	last_password on openldap mounts   returned                       absent (document 3)
//	creds on openldap mounts           served                         400 (document 3 lists creds for ldap only)
//	static role or library set         400 "missing LDAP              404: the configuration is a missing object
//	  written before the config        configuration"
//	static-cred, rotate-role of a      400 "unknown role",            404 with an empty errors list, as every missing
//	  missing role                     "role doesn't exist"           object here
//	check-in of an account another     400                            403 "permission denied": the caller lacks the
//	  caller borrowed                                                 right, answered as every refused right
//	rotate-root with a bindpass the    500 naming the LDAP error      400 naming the directory's answer: a configuration
//	  directory refuses                                               mistake, never 403 (it is not the caller's ACL)
//	a change the directory refuses     500                            400 naming the directory's answer
//	  (non-leaf, constraint, rights)
//	directory unreachable, timing out  500                            503: the request may succeed later
//	  or busy
//	messages                           Vault's words                  keel's rules after the wire names
//
// # Caveats
//
// Only kv version 1 and the ldap and openldap engines can be mounted; the
// engines' rotation workers run until the table is closed; tuning endpoints
// (mount.Table.Tune has no route yet), namespaces, response wrapping and
// the legacy sys/renew and sys/revoke paths are not served. Messages are
// keel's rules after Vault's wire names, not always Vault's own words.
// GET sys/mounts also lists the stored mounts that are not served (no
// longer valid, or an unmount that did not finish), with an "error" member
// Vault does not have: an operator must see them to remove them.
package vault
