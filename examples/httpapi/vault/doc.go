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
//	POST, GET, DELETE  /v1/:mount/config                GET never shows bindpass nor client_tls_key
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
