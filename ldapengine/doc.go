// Package ldapengine implements the ldap and openldap secrets engines of
// Vault: a bind configuration per mount, root password rotation, static
// roles whose directory password rotates on a schedule, dynamic roles that
// create directory accounts from templated LDIF for the life of a lease,
// and library sets that lend service accounts. Passwords come from
// package passwordpolicy (Vault's sys/policies/password).
//
// # Basics
//
// New makes the engine of one mount with its Flavor: FlavorLDAP or
// FlavorOpenLDAP. The openldap flavor refuses the ldap-only settings
// (Config.UserDN, UserAttr, UPNDomain, ConnectionTimeout) and never
// returns StaticCred.LastPassword; it also has no library sets and no
// dynamic credentials, and its static roles need a DN. These differences
// are one table (flavor.go), consulted wherever the flavors differ. The
// directory is reached through the
// small Directory interface: LDAP (github.com/go-ldap/ldap/v3) for real
// servers, ldaptest.Directory (package ldapengine/ldaptest) for tests.
// Passwords are changed with the Password Modify extended operation for
// schema openldap (so that slapd stores a hash), a replace of unicodePwd
// for ad and of racfPassword for racf.
//
// Passwords are 64 letters and digits from crypto/rand, or Config.Length of
// them, or generated from the policy of Options.Policies (a
// passwordpolicy.Policies) that Config.PasswordPolicy names; the engine
// generates them with no rights check of its own on the policy
// (passwordpolicy.Policies.GenerateUnchecked).
//
// Rotation never loses a password: the new password is written to the
// store (a write-ahead record, and the role is rescheduled for a retry)
// before the directory changes, and the role takes it after; a pending
// record is reused by the next attempt. Start runs a worker that calls
// Step, which reads the store's due index in time order up to the first
// role not yet due. Every role's next rotation is stored; the worker
// sleeps until the earliest one, and creating, updating or rotating a role
// wakes it when needed.
//
// # Operations
//
// The engine's methods follow the API convention of keel (CONVENTIONS.md
// at the module's root), over the objects of Vault's engines:
//
//	configuration   PutConfig (replace), UpdateConfig (change some fields),
//	                GetConfig, DeleteConfig, RotateRoot
//	static roles    PutStaticRole, GetStaticRole, ListStaticRoles,
//	                DeleteStaticRole, GetStaticCred, RotateRole
//	dynamic roles   PutDynamicRole, GetDynamicRole, ListDynamicRoles,
//	                DeleteDynamicRole, CreateDynamicCred
//	library sets    PutLibrarySet, GetLibrarySet, ListLibrarySets,
//	                DeleteLibrarySet, GetLibraryStatus, CheckOut, CheckIn
//	after a restore MarkRestored (see After a restore)
//
// PutStaticRole, PutDynamicRole and PutLibrarySet create the object at the
// name the caller gives, or update it, as a write of Vault does: the
// fields of the …Request that are nil (or zero, where so documented) keep
// their stored value. PutConfig replaces the configuration as a whole,
// UpdateConfig changes the fields of its ConfigRequest that are not nil.
// Get reads one object (GetStaticCred the current credential of a static
// role, GetLibraryStatus the state of a set's accounts);
// CreateDynamicCred makes a new directory account and its lease, each
// time; Delete of a missing object succeeds, as Vault's does. Inputs and
// results are Go values: the wire names of Vault's API are the adapters'
// (package examples/httpapi/vault maps them).
//
// The lists of roles and sets can grow without bound: ListStaticRoles,
// ListDynamicRoles and ListLibrarySets return one keel.Page of names at a
// time, 1,000 by default, and keel.All walks them all. The
// cursor of the next page (Page.Next) is the last name given, opaque to
// the caller: a walk goes on after it while names are created and
// deleted, giving every name that exists throughout once. The size of a
// library set is bounded by the store's transactions: Engine.Limits
// reports it (Limits.MaxLibraryAccounts); the fixed limits are stated where
// they apply (names of 512 bytes, service account names of 256, passwords
// of 1,024).
//
// # Outages
//
// A password change whose outcome is not known (a timeout, a connection
// lost after the request went out: an error without ErrNotApplied) is
// settled by the worker, woken for it, within Options.RetryInterval of the
// directory answering again: it first binds with the new password (the
// change was made: it is adopted without changing it again), else sets it
// again. Until then GetStaticCred fails with keel.KindUnavailable carrying
// keel.RetryAfterOf (the Vault adapter answers 503 with Retry-After)
// rather than hand out a password that may not bind, and check-out skips
// such accounts. A change the directory certainly did not make
// (ErrNotApplied: it could not be reached, or refused the request) leaves
// the stored password in place. A failed rotation is recorded on the role
// (StaticRole.Failures, LastError, NextRotation) and retried with a
// jittered backoff from a second up to Options.RetryInterval until it
// succeeds. The same holds for root rotation (the worker keeps whichever
// password the bind account accepts), check-ins and lease ends (the worker
// finishes the check-in and removes the lease).
//
// # After a restore
//
// A copy of the store (package snapshot) holds the passwords of the
// moment it was taken; the directory may have moved on since (a rotation,
// a check-in, a root rotation), and an old password handed out does not
// bind. After restoring a copy, the composition root calls
// Engine.MarkRestored (package mount's Table.MarkRestored does, for every
// engine it serves). The mark is one record in the engine's store, so that
// every process of a shared store, and a restart, sees it; it rewrites no
// role, so that marking costs one write however many roles there are
// (rewriting them all in one transaction would exceed etcd's limits).
// While it lasts:
//
//   - GetStaticCred serves a role's stored password only once the role is
//     verified: the engine binds as the role's entry with it; when the
//     directory refuses it, the role is rotated through the bind account
//     (the usual write-ahead change: no second way of changing a password)
//     and the new password is served. A directory that cannot be reached
//     is keel.KindUnavailable with keel.RetryAfterOf, never the unverified
//     password. A role whose password still binds keeps it: nothing live
//     is changed.
//   - The bind account is verified by binding with its stored password
//     (once per stored password). When the directory refuses it (a root
//     rotation after the copy was taken), every operation that binds as it
//     (rotations, check-in, check-out's replacement of a dead password,
//     PutStaticRole, PutLibrarySet, dynamic credentials and their
//     revocation) fails with keel.KindConflict saying so, before it
//     changes anything. The operator sets a password of the bind account
//     in the directory and writes it with PutConfig or UpdateConfig
//     (BindPass); the worker also binds again at each retry, so that the
//     old password put back in the directory is found.
//   - CheckOut lends only a verified account: it verifies the available
//     accounts of the set in check-out order up to the first one whose
//     password binds or has been replaced. An account checked out in the
//     copy whose password still binds stays checked out to its borrower
//     (and its lease, which a lease manager held after the restore,
//     lease.Manager.Hold, does not revoke until released);
//     one whose password no longer binds gets a new password and is
//     checked in, its lease ended (its borrower's password was dead
//     already). A check-in needs no verification: it always sets a new
//     password through the bind account, which is what reconciling would
//     do.
//   - The worker (Step) verifies the bind account and every role and
//     account that nothing read, in batches, and removes the mark once all
//     are verified; a verification that fails is tried again after
//     Options.RetryInterval.
//
// Each verified role or account is recorded by one key of its own, under
// the mark's generation (so that a copy taken during a verification does
// not count what was verified before it); the keys go with the mark. A
// role or account whose password change is pending is settled first, as
// after an outage. Without the mark, a read of static-cred or a check-out
// reads one more key in the transaction it makes anyway (the mark's
// absence), and binds nothing.
//
// # Errors
//
// Errors wrap the kinds of package keel: keel.KindInvalid (with the Go
// field path, see keel.FieldErrors) for broken rules, including a static
// role whose dn or username does not resolve in the directory (the role is
// not stored); keel.KindNotFound for a missing role, configuration or
// password policy; keel.KindConflict for an entry already managed by
// another role, for a directory that refuses the configured bind account,
// and for a change the directory refuses (not allowed on a non-leaf, a
// constraint, missing rights), each naming the directory's answer;
// keel.KindUnavailable for a directory that cannot be reached, times out or
// answers that it is busy. Never keel.KindUnauthenticated: that is the
// caller's kind, and a directory's refusal is not the caller's.
//
// Every message starts with "ldapengine: ", once, also that of an error
// of another package passed on (the store's, the context's, the
// Authorizer's, a Directory's), whose text follows the prefix. The rules
// of keel.FieldErrors do not carry it: an adapter that shows them, under
// its own names of the fields, shows them as they are.
//
// # Rights
//
// Each operation asks the Authorizer of Options for the capability on
// "MOUNT/config", "MOUNT/rotate-root", "MOUNT/static-role/NAME" (create or
// update, decided inside the transaction), "MOUNT/static-cred/NAME",
// "MOUNT/rotate-role/NAME"; for
// dynamic roles "MOUNT/role/NAME" (create or update, read, delete), list on
// "MOUNT/role/", read on "MOUNT/creds/NAME"; for library
// sets "MOUNT/library/SET" (create or update, read, delete), list on
// "MOUNT/library/", read on "MOUNT/library/SET/status", update on
// "MOUNT/library/SET/check-out", "MOUNT/library/SET/check-in" and
// "MOUNT/library/manage/SET/check-in". No operation of the engine needs
// a right on "sys/leases/...": a check-in ends its lease itself.
//
// # Concurrency
//
// Engine is safe for concurrent use. Password changes of one entry run one
// at a time, those of different entries overlap, and none runs while the
// bind account's password changes; across processes, Options.Leader keeps
// one worker, and the write-ahead record makes concurrent rotations of one
// role set the same password.
//
// # Caveats
//
// Choices where the spec says "not shown", following Vault's engines:
// UpdateConfig merges a write into the stored configuration (only the
// fields set change, as Vault's config write; the first makes it),
// PutConfig replaces it as a whole, and with both an empty BindPass keeps
// the stored one (a rotated root password is not known to anyone);
// the configuration must exist before a static role is created; a static
// role whose first rotation fails is kept and retried (Vault deletes it),
// so that a password the directory may already hold is never lost;
// Config.TLSMinVersion and TLSMaxVersion default to tls12. While a change
// of a role's password is under way or its outcome unknown, GetStaticCred
// is refused with a retry hint (Vault answers with the stored password).
//
// # Names
//
// The paths of a mount that hold a name chosen by the user are, in the
// order in which Vault's router tries them (the first that matches takes
// the path): library/manage/:name/check-in, library/:name/check-in,
// library/:name/check-out, library/:name/status, role/:name, creds/:name,
// static-role/:name, static-cred/:name, rotate-role/:name and
// library/:name. As names hold "/", the path of one object could also
// match an earlier route with another name: a router would serve that
// route instead, and the engine's rights, asked on the same paths, would
// mix them up. The set "manage/lib1" has the check-in path
// library/manage/lib1/check-in, the forced check-in of the set "lib1": a
// borrower of "manage/lib1" could not check its account in, and a right
// meant for that check-in would take back the accounts of "lib1". So a
// name is refused when one of its object's paths is matched first by
// another route; in full, a library set's name may not
//
//   - start with the segment "manage" followed by more segments
//     ("manage/lib1": its check-in path is the forced check-in of "lib1"),
//   - end in a segment "status", "check-out" or "check-in" after others
//     ("a/status", "a/check-out", "a/check-in": its path library/a/status
//     is the status of the set "a", and so on).
//
// A single segment is a plain name ("manage", "status" are sets like any
// other), and these words may appear anywhere else ("ops/manage/x",
// "a/status/b"). No route follows a role's name and each kind of role has
// sections of its own, so every well-formed static or dynamic role name
// keeps paths of its own ("manage/x" and "a/status" are roles like any
// other). PutLibrarySet, PutStaticRole and PutDynamicRole apply the rule
// (one function over the table of routes, so that a route added to it
// constrains the names of its kind), before anything is read or written,
// with a keel.KindInvalid on Name that names both routes; since it is in
// the engine, every transport is safe. The other operations take any
// well-formed name: one that cannot be written names no object (not
// found), and a set stored under such a name before the rule can still be
// read, checked in and deleted through the engine.
// Vault accepts such names and serves their paths as the other route.
//
// # Dynamic roles
//
// A dynamic role (PutDynamicRole) holds templated LDIF: CreateDynamicCred
// renders the
// creation LDIF with a generated username and password and runs its
// entries in order (add, modify, delete); at the first error it runs the
// rollback LDIF, continuing past errors, and returns every error. On
// success it issues a lease from Options.Leases whose revocation (by the
// lease manager, through the engine's unexported Revoker) runs the
// deletion LDIF kept with the lease. Templates are Go's
// text/template with the functions of Vault's engine (random, truncate,
// truncate_sha256, uppercase, lowercase, replace, sha256, base64,
// unix_time, unix_time_millis, timestamp, uuid, and utf16le in LDIF);
// LDIF is parsed with github.com/go-ldap/ldif, one record at a time.
// Choices where the spec says "not shown", following Vault's engine:
//
//   - Dynamic roles exist in both flavors; CreateDynamicCred (Vault's
//     creds/:name) is refused by the openldap flavor with an error of kind
//     keel.KindInvalid, as the spec lists the endpoint for ldap only.
//   - A role is created when missing and updated otherwise (Vault's
//     existence check); only the fields sent change, and an empty string
//     clears one. The merged role must still have CreationLDIF and
//     DeletionLDIF.
//   - LDIF fields are decoded when they are standard base64 of UTF-8 text
//     (as Vault) and stored decoded, so a read returns them decoded.
//   - Each LDIF field is checked at write by rendering it with sample data
//     (as Vault) and parsing the result; it must hold at least one entry
//     (as Vault). The username template is checked the same way, and its
//     sample username must pass the rule on field values (below).
//   - DefaultTTL may not exceed MaxTTL when MaxTTL is set (Vault does
//     not check; the lease would be capped anyway), and neither may exceed
//     the mount maximum (Options.MaxTTL, zero: 768h).
//   - A record without changetype (a content record) is run as an add, as
//     ldapadd does. Values read from URLs (attr:< file://...) and controls
//     are refused in LDIF.
//   - DynamicCred.DistinguishedNames lists the DN of every CreationLDIF
//     entry, in order, without removing duplicates (as Vault).
//   - The lease is issued after the directory entries are created (as
//     Vault); when issuing fails, the deletion LDIF is run and the error
//     returned. Leases are renewable, up to the role's MaxTTL (as Vault);
//     the role is not read again on renewal.
//   - .ExpirationTime is the issue time plus the role's DefaultTTL, or,
//     when it is unset, the least of MaxTTL, the mount maximum and 768h
//     (Vault uses the role's DefaultTTL only, which gives the issue time
//     when it is unset). The lease manager may still cap the lease lower.
//   - The deletion LDIF is rendered when the credential is created and kept
//     in the lease's data (Vault keeps the template and its data and
//     renders at revocation): revocation then works after the role is
//     deleted or changed, random, uuid and time functions give the values
//     the creation saw, and the password is not kept.
//   - Deletion and rollback LDIF run every entry; an entry or attribute
//     value that is already missing counts as done, so that revocation is
//     idempotent and a rollback after an early failure reports only real
//     errors. Any other failed entry fails the revocation, which the lease
//     manager retries until the lease is irrevocable.
//   - After the deletion LDIF (and a rollback) ran, every entry the
//     creation LDIF added must be gone: an LDIF that names another entry
//     (a role misconfigured) leaves a live account, so the revocation
//     fails (keel.KindInvalid on DeletionLDIF, naming the entry; as Vault,
//     which answers 400 and keeps the lease). The role's deletion LDIF as
//     it is then is tried at each attempt, so that the account is removed
//     once an operator fixes the role. Leases of older versions do not
//     record the added entries and are not checked.
//   - The caller's display name (keel.Principal.DisplayName) and the
//     generated username are refused (keel.KindInvalid; at role write,
//     field "UsernameTemplate") when they hold control
//     characters (line breaks among them), a DN special (, = + < > # ; "
//     \), a leading or trailing space or a leading ':': such a value could
//     otherwise add LDIF lines or move an entry to another DN. Vault does
//     not check.
//   - Templates may not use range, define, block or template, and every
//     value and output is capped in size, so that rendering always ends
//     quickly. truncate and truncate_sha256 count characters (runes), not
//     bytes; timestamp formats the time in UTC; random N takes 1 to 1024.
//
// # Library sets
//
// A library set (ldap flavor) lends directory service accounts: PutLibrarySet
// names them (each must exist in the directory, and belong to one set or
// static role only), CheckOut lends the first free one with its password
// and a renewable lease from Options.Leases, CheckIn (or the end of the
// lease, revoked by the lease manager) gives it back and changes its
// password. Check-out, check-in and expiry each run in one transaction.
//
// Sizes. On a store that bounds its transactions a set holds at most
// Limits.MaxLibraryAccounts accounts (MaxTxReads less 8: 120 on etcdstore's
// default limits), because check-out and the start of DeleteLibrarySet
// read every account of the set in the one transaction that decides, all
// or nothing; PutLibrarySet refuses a longer list up front
// (keel.KindInvalid on ServiceAccountNames, naming the limit), with
// nothing written. Within it, PutLibrarySet claims the accounts that join
// in batches sized from the store's limits, before one last transaction
// writes the set (until then no check-out sees them); when it fails it
// releases what it claimed, and a claim left by a crash is taken over by
// the next PutLibrarySet of the set. DeleteLibrarySet removes the set in
// one transaction, then frees its accounts in batches (storage.Batch): run
// again, it frees what an interrupted run left. A set of 64 accounts is
// created, lent, returned and deleted on etcd (tested on every store).
//
// Choices where the spec says "not shown", following Vault's engine:
//
//   - Check-out picks the first available account in the order of
//     LibrarySet.ServiceAccountNames, as Vault does. A CheckOutRequest.TTL
//     of zero means the set's TTL; a TTL above the set's is lowered to it;
//     when the set's TTL is zero (unlimited) the requested TTL is used. A
//     zero TTL or MaxTTL gives a lease of the lease manager's default or
//     max TTL of the mount: keel has no lease without an end.
//   - The check-out lease is renewable, its max TTL is the set's MaxTTL,
//     its path is "MOUNT/library/SET/check-out" (Vault's lease ids read
//     "ldap/library/SET/check-out/…"), and its Data names the set and the
//     account.
//   - The password handed out at check-out is the one stored at the last
//     rotation; passwords change when an account joins a set, at check-in
//     and at the end of a lease (Vault rotates on check-in, not on
//     check-out).
//   - Check-in enforcement (Vault's rule): the caller may check an account
//     in when its entity id, or else its client token id, equals the
//     borrower's (both non-empty).
//   - Check-in without names takes the accounts of the set that are
//     checked out and that the caller may check in; more than one is an
//     error (keel.KindInvalid on ServiceAccountNames), none checks nothing
//     in (an empty list). A named account that is checked out by someone
//     else is keel.KindForbidden, and nothing is checked in; a name that is
//     not in the set is keel.KindInvalid. Names are checked in one at a time: when
//     one fails, those before it stay checked in (they are returned with
//     the error).
//   - Create needs ServiceAccountNames (at least one). An update changes
//     only the fields given (pointer fields; nil ServiceAccountNames keeps
//     the list). MaxTTL, when not zero, may not be below TTL (Vault's
//     rule). Removing an account that is checked out is refused
//     (keel.KindConflict), as is deleting a set while any of its accounts
//     is checked out; deleting a missing set succeeds.
//   - Role and set names are hierarchical, as Vault's ("team/app"): one
//     or more segments of letters, digits, '_', '.', '@' and '-' (each
//     starting with a letter or digit) joined by "/"; they are
//     case-sensitive. The List operations show one level, with a folder
//     ending in "/" for deeper names, in pages (see Operations). No name
//     may give a path that also means another route (see Names).
//   - An account may belong to one set or one static role of the engine:
//     the owner record "account/<lower-cased DN>" holds "library:SET" for
//     a set (the role name for a static role); the check happens in the
//     transaction that adds the account.
//   - Password changes never lose a password: the new password is written
//     to the account's record (write-ahead) before the directory changes,
//     and a retry reuses it. When the directory change (or storing its
//     success) fails with an unknown outcome, the account stays out of
//     circulation (indexed as pending) until the worker settles it: the
//     account then gets its password, a check-in or lease end is finished
//     and its lease ended with it, and a joining account becomes available. The
//     alternative, making it available with the old password, could hand
//     out a password the directory no longer accepts when the failed change
//     did reach the server. A change that certainly was not made leaves
//     the account as it was (checked out to its borrower, who keeps the
//     old password).
//   - Password changes of one account run one at a time, so that a slow
//     retry cannot overwrite a later password; engines of several
//     processes sharing a store do not share that lock (the write-ahead
//     record and the transactions keep them consistent).
//   - An account whose lease has expired stays checked out until the lease
//     manager has revoked the lease (rotated the password): handing it out
//     earlier would share the password with its previous borrower.
//   - Check-in ends the account's lease in the transaction that checks the
//     account in (lease.Tx.End of the mount's Issuer), whether the caller
//     checks it in or the worker finishes a check-in: the lease is gone
//     when the account is available again, no revoker runs, and no right
//     on sys/leases is needed (the borrower needs update on its set's
//     check-in path only). The engine has no exported method that revokes
//     a lease: its Revoker is unexported, reached through the lease
//     manager, which checks its callers' rights.
//   - A check-out lease is renewed (sys/leases/renew) only while its
//     account is checked out under it with no check-in under way: the
//     renewal of a lease whose account is checked in, or lent again under
//     another lease, is refused (keel.KindInvalid on LeaseID), as Vault's
//     engine refuses it. Once checked in the lease is usually gone, and
//     the renewal answers keel.KindNotFound.
//   - A check-out needs a caller with a client token id or an entity id
//     (keel.Principal.ClientTokenID, EntityID): they name the borrower who
//     may check the account in. CheckOut refuses a caller with neither
//     (keel.KindInvalid on Principal.ClientTokenID) before writing
//     anything.
//   - No account available is ErrNoAccountAvailable, of kind
//     keel.KindConflict (the set's state refuses the check-out now, the
//     request itself is fine); the Vault adapter's one status table
//     renders it 400, as Vault does.
//   - Library sets exist only in the ldap flavor: in openldap every
//     library operation fails with keel.KindInvalid naming the flavor.
package ldapengine
