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
//	GET, HEAD      /v1/sys/health                   no token; Vault's 14 members, status 200 or activecode
//	GET            /v1/sys/seal-status              no token; sealed false (what `vault status` reads)
//	GET            /v1/sys/leader                   no token; ha_enabled false
//	GET            /v1/sys/internal/ui/mounts/:path the mount entry under path, with "path": the
//	                                                CLI's kv version probe (kv version 1 here)
//	GET, POST, PUT /v1/auth/token/lookup-self       the caller's token
//	GET            /v1/sys/mounts                   list mounts
//	GET            /v1/sys/mounts/:path             read the entry of the mount at path
//	POST, PUT      /v1/sys/mounts/:path             enable a kv version 1, ldap or openldap engine
//	DELETE         /v1/sys/mounts/:path             disable it: revoke its leases, delete its data
//	PUT, POST      /v1/sys/leases/lookup            lease_id in the body
//	LIST           /v1/sys/leases/lookup/:prefix    (or GET with list=true); needs sudo
//	PUT, POST      /v1/sys/leases/renew[/:id]       lease_id, increment (seconds, or a duration: "10m")
//	PUT, POST      /v1/sys/leases/revoke[/:id]      lease_id, sync
//	PUT, POST      /v1/sys/leases/revoke-prefix/:p  sync; needs sudo
//	PUT, POST      /v1/sys/leases/revoke-force/:p   needs sudo
//	PUT, POST      /v1/sys/leases/tidy              202 with Vault's warning
//	GET            /v1/sys/leases/count             type=irrevocable, include_child_namespaces
//	GET            /v1/sys/leases                   type=irrevocable, include_child_namespaces, limit
//	GET            /v1/sys/leases/hold              keel's own: {"held": bool}; needs read
//	PUT, POST      /v1/sys/leases/hold              keel's own: hold the expiry revocations; sudo
//	DELETE         /v1/sys/leases/hold              keel's own: release them; needs sudo
//	GET            /v1/sys/storage/raft/snapshot    a snapshot archive of the store (Options.Snapshots); sudo
//	POST, PUT      /v1/sys/storage/raft/snapshot    restore one into the running server (also …/snapshot-force); sudo
//	GET            /v1/sys/quotas/lease-count/:name read a lease-count quota (with its counter)
//	POST, PUT      /v1/sys/quotas/lease-count/:name path, max_leases (role "", inheritable false)
//	DELETE         /v1/sys/quotas/lease-count/:name delete it; 204 for a missing one too
//	LIST           /v1/sys/quotas/lease-count       (or GET with list=true)
//	GET            /v1/sys/quotas/rate-limit/:name  read a rate-limit quota (Options.RateLimits)
//	POST, PUT      /v1/sys/quotas/rate-limit/:name  path, rate, interval, block_interval (the whole quota)
//	DELETE         /v1/sys/quotas/rate-limit/:name  delete it; 204 for a missing one too
//	LIST           /v1/sys/quotas/rate-limit        (or GET with list=true)
//	any            /v1/:mount/:path                 kv read (GET), list (LIST or GET list=true),
//	                                                write (POST, PUT), delete (DELETE)
//	PATCH          /v1/…                            400, 415 or 405, as Vault (see Status codes)
//
// and the table's identity groups (mount.Table.Groups):
//
//	POST, PUT          /v1/identity/group             create, or update by id (in the body) or name
//	GET, POST, DELETE  /v1/identity/group/id/:id      read, update (POST, PUT), delete
//	GET, POST, DELETE  /v1/identity/group/name/:name  read, create or update (POST, PUT), delete
//	LIST               /v1/identity/group/id          list ids, with key_info (or GET with list=true)
//	LIST               /v1/identity/group/name        list names (or GET with list=true)
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
// # Tokens
//
// The caller must be in the request's context (keel.WithPrincipal) before
// the handler runs: the adapter authenticates no one. A program's
// middleware reads the token with RequestToken and puts its principal in
// the context, as the example server does. RequestToken reads, in this
// order, X-Secrets-Token (the service's document), X-Vault-Token (what
// Vault's clients send: the vault CLI, vault/api, Vault Agent, with
// VAULT_TOKEN) and Authorization: Bearer <token> (which Vault accepts
// too); the first header that holds a token wins (an empty header, or an
// Authorization of another scheme, holds none), and the later ones are
// not read, even when the first holds a token nobody knows (an
// unknown token answers 403, it is never replaced by another header's).
// Vault itself reads X-Vault-Token, then Authorization.
//
// auth/token/lookup-self describes the caller's token from its principal,
// with Vault's members: id (the token as the request sent it, by the rule
// above), accessor (keel.Principal.ClientTokenID), display_name,
// entity_id, meta, policies (sorted), path ("auth/token/root" for a holder
// of the root policy, else "auth/token/create"), type "service", orphan
// true; ttl, creation_ttl, explicit_max_ttl and num_uses 0, expire_time
// null and renewable false, because a keel program's tokens are given at
// start and neither expire nor renew. Without a principal it answers 403
// "permission denied", as Vault.
//
// # Server status
//
// sys/health, sys/seal-status and sys/leader answer without a token, as
// Vault's, from Options.Server: a keel server is always initialized,
// unsealed and active. sys/health answers Vault 1.21's 14 members
// (initialized, sealed, standby, performance_standby,
// replication_performance_mode and replication_dr_mode "disabled",
// server_time_utc, version, enterprise false, cluster_name, cluster_id,
// echo_duration_ms, clock_skew_ms and replication_primary_canary_age_ms
// 0) with 200, or the status of its activecode parameter; the other codes
// (standbycode, sealedcode, uninitcode, drsecondarycode,
// performancestandbycode, haunhealthycode, removedcode) and standbyok and
// perfstandbyok are checked and change nothing. sys/seal-status answers
// type "shamir", t and n 1, as a Vault development server, with version,
// build_date, cluster_name, cluster_id and storage_type.
//
// # Mount entries
//
// sys/mounts, sys/mounts/:path and sys/internal/ui/mounts/:path answer a
// mount's entry with Vault's members: accessor, config
// (default_lease_ttl and max_lease_ttl, 0 for the system's, and
// force_no_cache false), deprecation_status "supported", description,
// external_entropy_access, local and seal_wrap false, options,
// plugin_version "", running_plugin_version (Options.Server.Version and
// "+builtin.keel"), running_sha256 "", type and uuid. The vault CLI asks
// sys/internal/ui/mounts/PATH before every kv command and reads
// options.version: a kv mount answers "1", so `vault kv get secret/x`
// reads secret/x. That endpoint answers 403 with Vault's message for a
// path under no mount, and for a caller that holds none of read, list,
// create, update, delete or sudo on the mount or on the path asked for
// (mount.Table.MountFor decides), so that it does not reveal which mounts
// exist. The adapter decides no right itself: every right is the table's
// Authorizer's, asked by the library.
//
// Every answer of a path with data names its mount type in mount_type, as
// Vault's: the engine's type under a mount ("kv", "ldap", "openldap"),
// "system" under sys/, "identity" under identity/, "token" under
// auth/token/. Error answers have none.
//
// # Status codes
//
// As Vault: 200 with a body; 204 without one (writes, deletes, sync
// revocations); 202 without a body for queued revocations (of an id that
// names no lease too); 202 for tidy, with Vault's warning ("Tidy operation
// successfully started. …") in Vault's envelope; 404 with {"errors":[]} for
// a missing secret, an empty listing, and a kv read of a mount's root or
// of a path ending in "/" (which can hold no secret; 403 without read on
// it, as Vault checks the right first); 404 {"errors":["policy does not
// exist"]} for a read or generate of a missing password policy; 400
// {"errors":["lease_id must be specified"]} for a lookup, renew or revoke
// without lease id; 400 {"errors":["invalid lease"]} for an unknown or
// expired lease; PATCH, which no endpoint here serves, answers as Vault's
// endpoints without a patch operation: 400 naming the problem when the
// Content-Type does not parse (or is absent), 415 "PATCH requires
// Content-Type of application/merge-patch+json, provided …" for another
// media type, 405 "unsupported operation" for that one; 400 for an
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
// # Identity groups, password policies, leases
//
// Where the service's document is silent, as Vault 1.21:
//
//   - LIST identity/group/id answers key_info beside keys: for each id, the
//     group's name, num_member_entities and num_parent_groups. LIST
//     identity/group/name answers none, as Vault's (whose key_info is
//     keyed by id and keeps only the keys listed, so none of the names).
//     A group deleted since the listing, or one the caller may not read,
//     has no entry.
//   - A group read answers member_group_ids and parent_group_ids null when
//     empty (the document allows null there), and alias {}.
//   - A password policy sent in standard base64 is decoded and stored as
//     text, as Vault's (an HCL policy is never valid base64).
//   - Renew takes increment as Vault's parseutil reads it (see
//     keel.ParseDuration): whole seconds (600, "600"), a duration string
//     ("10m", "1h30m") or days ("7d"); a leased kv read's renewal answers
//     the secret's data; its warnings print durations as Vault's do,
//     in whole seconds without zero minutes and seconds:
//     TTL of "2h" exceeded the effective max_ttl of "59m58s"; TTL value is
//     capped accordingly.
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
// Where the adapter's own endpoints answer otherwise than Vault 1.21, and
// why:
//
//	what                               Vault                          keel, and why
//	renew of a leased kv lease         the secret read anew, and its  the secret read anew; lease_duration from increment
//	                                   ttl as the new lease_duration  (the document's rule)
//	renew with a negative increment    counts as 0                    400 naming increment: a negative duration is a
//	                                                                  client's mistake
//	renew with increment 0             the engine's TTL, else the     the TTL the lease was issued with (keel's engines
//	                                   mount's default                give theirs at issue)
//	lease lookup: last renewal         last_renewal                   last_renewal_time (the document's name)
//	lease lookup after a failed        the lease's fields only        also revoke_attempts, revoke_error and
//	  revocation                                                      next_revoke_attempt: why and when, for the
//	                                                                  operator (absent until a revocation fails)
//	tidy                               answers at once, tidies in     tidies, then answers 202 with Vault's warning, or the
//	                                   the background; mount_type ""  error; mount_type "system" as every sys/ answer
//	group update                       204 without a body             200 with data.id and data.name (the document)
//	group name when none is given      group_ and 8 hex digits        entity-<UUID> (the document)
//	group read of policies,            null when empty                [], [] and {}: the document types them as an array
//	  member_entity_ids, metadata                                     and a map, not null (it allows null only for
//	                                                                  member_group_ids and parent_group_ids)
//	key_info of a group                alias of an external group     no alias: keel has no group aliases
//	group read                         namespace_id                   absent: keel has no namespaces
//	a boolean where a list of strings  coerced to "1" / "0"           400 naming the field: a policy named "1" is never
//	  or key=value pairs is expected                                  what was meant
//	data after the JSON body           ignored: the first value is    400 "failed to parse JSON input: data after the JSON
//	  ({"a":"b"}{"c":"d"})             used                           value": keel does not guess which one was meant
//	integers (length, max_page_size)   accepted                       400 naming the field, "must not be negative" or
//	  negative or beyond an int                                       "must be at most …"
//	a path over 4096 bytes, or a       served                         400 "path: …" from the example server (limits.go);
//	  segment over 1024 bytes                                         the adapter alone does not check it
//	more bodies in flight than         served                         503 with Retry-After: 1 after up to 10 s of waiting
//	  -max-inflight-bytes                                             (the example server)
//	PATCH with merge-patch+json        403 without the patch right,   405 for every caller: keel has no patch right and
//	                                   then 405                       no endpoint here has a patch operation
//	password policy messages           Vault's ("missing policy",     keel's rules after the wire name ("policy: …"),
//	                                   "invalid password policy: …")  but "policy does not exist" for a missing one
//	token headers                      X-Vault-Token, then            X-Secrets-Token first (the service's document),
//	                                   Authorization: Bearer          then Vault's two, in Vault's order; the example
//	                                                                  server also reads the Consul dialect's
//	                                                                  X-Cluster-Token last, on every path (one token
//	                                                                  rule for the three dialects it serves)
//	lookup-self of a keel token        the token store's entry:       ttl 0, renewable false, expire_time null, num_uses 0,
//	                                   creation_time, issue_time,     creation_time 0, no issue_time: keel's tokens are
//	                                   ttl, renewable…                the program's, given at start, without a lifetime
//	lookup-self policies               the token's plus "default"     the principal's: keel has no default policy
//	sys/health bad code or boolean     400 {"errors":[]}              400 naming the parameter; a code outside 200-599 is
//	                                                                  a 400 too (Vault's Go server panics below 100 or
//	                                                                  above 999)
//	sys/health, seal-status, leader    405 {"errors":[]}              405 "unsupported operation" with an Allow header
//	  with another method
//	sys/seal-status type, t, n         the seal's                     "shamir", 1, 1, as a development server: keel has no
//	                                                                  unseal process (a store's seal key is given at start)
//	sys/leader                         HA details when clustered      ha_enabled false always: every keel server answers
//	                                                                  every request; with etcd only background work elects
//	                                                                  leaders
//	sys/mounts                         also sys/, cubbyhole/,         the table's mounts only: those are Vault's own
//	                                   identity/, and each mount      engines, served here as fixed routes; the mounts in
//	                                   again beside "data"            data only, which is what Vault's clients read
//	mount entry TTLs                   resolved to the system's in    0 for the system's, in every view
//	                                   some reads
//	running_plugin_version             the plugin's version           the program's version and "+builtin.keel"
//	sys/internal/ui/mounts/:path       403 unless any rule of the     any right on the mount's path or on the path asked
//	  access                           caller's ACL lies under the    for: keel's Authorizer answers a right on a resource,
//	                                   mount                          it cannot list a caller's rules
//	sys/internal/ui/mounts             lists visible mounts           not served (405 "unsupported operation"): the CLI
//	                                                                  asks for one path
//	sys/leases/hold                    no such route: a restored      keel's own (lease.Manager.Hold): held, the expiry
//	                                   snapshot revokes what fell     worker revokes nothing until released, so that a
//	                                   due at once                    restored copy kills no credential still in use
//	sys/storage/raft/snapshot          raft's snapshot: meta.json,    the same four entries, gzip'd tar, which vault/api's
//	  archive                          state.bin (the raft FSM),      RaftSnapshot checks; state.bin is keel's stream
//	                                   SHA256SUMS, SHA256SUMS.sealed  (package snapshot) of every key of the store, values
//	                                   sealed by the barrier          as the store serves them (in clear, even over a
//	                                                                  sealstore: keep the file secret; the restoring
//	                                                                  server seals them with its own keys);
//	                                                                  SHA256SUMS.sealed is the SHA-256 of SHA256SUMS, not
//	                                                                  sealed; meta.json is keel's ("keel_snapshot": 1)
//	restoring a Vault snapshot         restored                       400 "invalid snapshot: … a Vault raft snapshot cannot
//	                                                                  be restored into keel"; so is an archive cut short,
//	                                                                  altered, or with an unknown entry, before any write
//	restore, snapshot-force            the running cluster's data     the store's keys replaced but those the program keeps
//	                                   replaced; without force, a     (Snapshots.Keep: the example server keeps its own
//	                                   snapshot of another cluster    identity, root token and audit devices); force
//	                                   (other keys) is refused        changes nothing: keel's archive carries no keyring;
//	                                                                  the leases are held before the first key is
//	                                                                  written and stay held until DELETE
//	                                                                  sys/leases/hold; engines are marked to check
//	                                                                  their credentials (mount.Table.MarkRestored)
//	lease-count quotas                 Enterprise only                served: package lease's quotas; a leased read or a
//	                                                                  credential beyond one answers 429 as Vault's,
//	                                                                  its message followed by the quota's name, max_leases
//	                                                                  and path, which Vault's does not say
//	lease-count quota path             a namespace, a mount, a mount  "", a mount, or a request path under one, which
//	                                   and an exact path suffix, or   covers that path and the paths under it: Vault's
//	                                   one ending in a glob ("p/*",   "p" and "p/*" at once (a trailing "/*" is accepted
//	                                   the paths under the prefix)    and means the same; a glob elsewhere is a 400); the
//	                                                                  mount need not exist (another process may mount it)
//	lease-count quota role,            role for auth mounts'          400 naming the field when set: keel serves no auth
//	  inheritable                      logins; inheritable for        mount and has no namespaces
//	                                   namespaces
//	lease-count quota unknown field    ignored                        400 naming the field
//	more than 100 lease-count quotas   accepted                       413 (a store holds 100 at most): the counts share one record,
//	                                                                  written by every issue under a quota
//	rate-limit quota path              a namespace, a mount, a mount  as lease-count quotas': "", a mount, or a path under
//	                                   and an exact path, or a glob   one, covering it and the paths under it
//	                                   ("p/fo*": string prefix); the  (a trailing "/*" means the same); the mount need not
//	                                   mount must exist               exist; more than 100 quotas is a 413
//	rate-limit quota headers           Retry-After and X-Ratelimit-*  on every 429 (LimitRate): Retry-After rounded up,
//	                                   only with sys/quotas/config's  X-Ratelimit-* unless blocked; never on an allowed
//	                                   response headers, on every     answer (sys/quotas/config is not served, nor its
//	                                   answer; Retry-After truncated  exempt paths: ratelimit.Options.Exempt, Vault's
//	                                   (may be 0)                     defaults)
//	rate-limit quota role, unknown     role for auth mounts; group_by 400 naming the field: keel serves no auth mount;
//	  field, group_by                  (Enterprise); unknown ignored  clients are grouped by IP, as Vault's CE
//	a subtree path without its slash   a listing lists "p/"; other    the same: a listing is served as the listing of "p/",
//	  (sys/leases/lookup, …)           operations per the path        any other method is 405 (never the mux's redirect)
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
