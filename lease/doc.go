// Package lease is the lease manager of keel's secrets engines: it records a
// lease for every secret an engine issues, revokes the secret through the
// engine when the lease expires, and serves the lease endpoints of Vault's
// sys/leases as typed operations: Get (Vault's lookup), List, Renew,
// Revoke, RevokePrefix, RevokeForce, Tidy, CountIrrevocable and
// ListIrrevocable.
//
// # Basics
//
// A program creates one Manager over a view of its store with New,
// registers each engine's mount with its Revoker (Register), and starts the
// worker (Start; Stop at shutdown). Register hands out the mount's Issuer,
// the one way to issue its leases: an engine that creates a secret asks for
// a lease with Issuer.Issue, or with Issuer.Update inside its own
// transaction so that its data and the lease commit together; an engine
// that takes a secret back (a library check-in) ends its lease in its own
// transaction the same way (Tx.End), calling no Revoker and needing no
// right on sys/leases. Package mount
// does all of this for the engines it builds (from the package's Example):
//
//	m, err := lease.New(storage.Sub(store, "lease/"), &lease.Options{Clock: clock})
//	ldap, err := m.Register(lease.Mount{Path: "ldap/", Revoker: lease.RevokerFunc(deleteAccount), DefaultTTL: time.Hour, MaxTTL: 2 * time.Hour})
//	l, err := ldap.Issue(ctx, lease.IssueRequest{Path: "ldap/creds/app", Renewable: true, Data: []byte("cn=v-app-1")})
//	// l.ID is "ldap/creds/app/" followed by 24 base62 characters: 7 that tell the issue time, 17 random.
//
// m.Start starts the expiry worker and m.Stop ends it; the Example drives
// the worker's Step itself, on a fake clock.
//
// Joins are checked, not assumed: an engine that issues leases inside its
// own transactions gives its store at Register (Mount.Store), which must be
// a view of the same store as the Manager's, not overlapping it
// (storage.Join); otherwise Register fails, at startup, instead of leaving
// leases where Get cannot find them.
//
// A lease's TTL is the request's, or the mount's default (Mount), or
// the system default (Options, 768h); its max TTL is the least of the
// request's, the mount's and the system's (768h); the TTL is capped at the
// max TTL, and so is every renewal, counted from the issue.
//
// When a lease expires, or a revocation is queued (Revoke with sync false),
// the worker calls the mount's Revoker outside any transaction and then
// removes the lease. A failed revocation is retried after RetryBase (20s),
// doubling up to RetryMax (5m), with ±20% jitter; after MaxAttempts (6)
// failures, or at once for an error marked Permanent, the lease becomes
// irrevocable: it keeps its last error (cut to 240 bytes), is
// counted and listed by CountIrrevocable and ListIrrevocable, cannot be
// renewed, and is retried every IrrevocableRetry (24h); a retry that
// succeeds removes it, and RevokeForce removes it whatever its revoker
// says.
//
// Reads enforce time: a lease whose ExpireTime is not after now reads as
// gone (Get: not found, "expired"; Renew: refused) before the worker has
// revoked it. It stays stored until then, and an irrevocable lease stays
// listed. A lease whose revocation failed stays visible to Get too
// (expired, with its attempts and last error) until a revocation succeeds:
// its secret still exists, and its owner can see why.
//
// # Storage
//
// The manager keeps everything in the store given to New (the example
// server and package mount give it the view "lease/" of theirs):
//
//	id/<lease id>                   the lease (a compact binary record)
//	due/<16 hex digits>/<lease id>  expiry index: when the worker next
//	                                tries to revoke the lease (Unix ns,
//	                                big-endian hex: key order is time order)
//	irrevocable/<lease id>          irrevocable index: mount and error
//	quotas                          the lease-count quotas, with their
//	                                counts (one record)
//
// Every operation on a lease changes the lease and its index entries in one
// transaction. Scheduling lives in the store, not in one Go timer per lease:
// New reads nothing, Step reads the expiry index from its start up to the
// first entry not due, and counting irrevocable leases reads their index
// only. A restart over a million leases is ready at once, and its first
// Step revokes what fell due while no manager ran. Operations that touch
// many leases (Step, RevokePrefix, RevokeForce, Tidy) work in batches of
// Limits().Batch leases per transaction, a number the store's limits on
// the writes and reads of a transaction may lower.
//
// # Lease-count quotas
//
// A lease-count quota (PutQuota, GetQuota, ListQuotas, DeleteQuota; the
// Enterprise lease-count quotas of Vault) names a path and a maximum
// number of leases: "" (every lease), a mount ("secret/"), or a request
// path under one ("ldap/creds/app", which covers the leases issued for it
// and for the paths under it, not "ldap/creds/app2"; a trailing "/*",
// Vault's glob, means the same). As in Vault, the
// most specific quota applies, alone: the one with the longest path that
// covers the lease's request path. A lease counts for that quota only
// (Quota.Leases), so that a mount's quota does not count the leases of a
// role that has a quota of its own, and deleting the role's quota gives
// them back to the mount's. An issue (Issuer.Issue, Tx.Issue) that would
// give the applying quota more than its MaxLeases leases is refused
// before anything is written, with a *QuotaError naming the quota
// (keel.KindTooLarge). An engine that creates its secret outside the store
// before the lease (a directory account) asks Issuer.CheckQuota first, so
// that a full quota refuses it before the backend is touched.
//
// Counts are exact across processes on one store: every transaction that
// stores a new lease or removes one (Revoke, RevokePrefix, RevokeForce,
// the worker's batches, which also remove what Tidy queues, Tx.End, and
// so a mount's removal of its leases)
// reads the quota record and updates the counts of the quotas that cover
// the lease, in that same transaction, so that concurrent issuers conflict
// on it and the store retries one of them. A quota set over existing
// leases counts them first, in batches (see PutQuota), exactly while
// leases come and go. The quota record is one key: issues under any quota
// conflict with each other (not with issues under none), and a store
// holds 100 quotas at most.
//
// # Lists and limits
//
// The two lists that grow with the leases are paged (keel.ListRequest in,
// keel.Page out): List, the names under a prefix, 1,000 names a
// page unless the request sets a limit, and ListIrrevocable,
// 10,000 leases a page. A page's Next is its last name or
// lease id, so that the following page starts after it while leases come
// and go; keel.All walks every page. CountIrrevocable returns counts, one
// per mount, not a list. The fixed limits are stated where they apply (an error
// kept is cut to 240 bytes; the default page sizes above); the one that depends on the store, the batch of the
// batched operations, is reported by Manager.Limits.
//
// # Errors
//
// Every error of the package has a message that starts with "lease: "
// (then the operation, such as "lease: renew"), and wraps one of keel's
// kinds; field errors name Go paths ("LeaseID", "Increment", "Prefix",
// "Path", "Store"). keel.KindInvalid: a malformed request (empty lease id,
// negative TTL or increment, a path under no registered mount, a bad
// mount) and a refused renewal (token, irrevocable, expired, not
// renewable, past the max TTL). keel.KindNotFound: an unknown or expired
// lease on Get and Renew. keel.KindForbidden: a missing right.
// keel.KindConflict: a lease changed while Renew called the engine.
// keel.KindUnavailable: a revoker's or renewer's error that has no kind of
// its own, and a mount without a revoker. keel.KindInternal: a corrupt
// record, a Tx used after its closure. keel.KindTooLarge: a lease too
// large for the store (a path past its key size, say), and an issue
// refused by a lease-count quota (a *QuotaError). The store's errors
// are wrapped with their kinds. The one exception is the error of the
// closure given to Issuer.Update, which Update returns as the closure
// returned it. Each operation
// that fails leaves the store as it was, except that a failed synchronous
// revocation is recorded as a failed attempt, and that batched operations
// keep the batches committed before the error.
//
// # Rights
//
// Each operation asks the Authorizer of Options for the capability Vault's
// policies need on the path of its endpoint: Get keel.CapUpdate on
// "sys/leases/lookup"; List keel.CapSudo on "sys/leases/lookup/<prefix>"
// (for each page);
// Renew keel.CapUpdate on "sys/leases/renew"; Revoke keel.CapUpdate on
// "sys/leases/revoke"; RevokePrefix keel.CapSudo on
// "sys/leases/revoke-prefix/<prefix>"; RevokeForce keel.CapSudo on
// "sys/leases/revoke-force/<prefix>"; Tidy keel.CapUpdate on
// "sys/leases/tidy"; CountIrrevocable keel.CapRead on "sys/leases/count";
// ListIrrevocable keel.CapSudo on "sys/leases"; PutQuota keel.CapUpdate,
// GetQuota keel.CapRead and DeleteQuota keel.CapDelete on
// "sys/quotas/lease-count/<name>", ListQuotas keel.CapList on
// "sys/quotas/lease-count". Issuer.Issue,
// Issuer.Update (Tx.Issue, Tx.End), Step and the worker are the engines'
// and the program's: they check no right.
//
// # Vault's behaviour where the specification is silent
//
//   - Revoking an unknown lease id succeeds and does nothing (Vault answers
//     204, or 202 when queued).
//   - Get and Renew of an unknown id fail with keel.KindNotFound (Vault
//     answers 400 "invalid lease" and "lease not found"; an adapter may
//     render it so). Get of an expired lease fails the same way until
//     a revocation of it fails, where Vault shows it with ttl 0 until it
//     is revoked: the moment between expiry and the worker's revocation
//     is not shown.
//   - List adds a trailing "/" to its prefix and lists what is stored,
//     expired and irrevocable leases included, a page at a time (Vault
//     answers every key at once: an adapter walks the pages).
//   - RevokePrefix and RevokeForce: a prefix without a trailing "/" is the
//     id of one lease when such a lease exists, and otherwise the folder
//     prefix+"/"; a synchronous prefix revocation stops at its first
//     failure. An empty prefix is refused (keel.KindInvalid).
//   - Renew with increment 0: Vault lets the engine choose, which usually
//     means its default TTL; keel grants again the TTL the lease was
//     issued with. A renewal capped at the max TTL reports it (Renewal's
//     Capped, Requested and TTL), and Vault's warning is the adapter's to
//     render. A token lease is refused with "tokens cannot be renewed
//     through this endpoint; use the token renew endpoint".
//   - Failed revocations: Vault retries 6 times from 10s doubling, with
//     ±50% jitter; keel from RetryBase (20s) doubling to RetryMax, ±20%.
//     Running out of attempts prefixes the kept error with "out of
//     retries: " as Vault does. Vault retries irrevocable leases once a
//     day; keel every IrrevocableRetry, updating their Attempts and
//     LastError.
//   - A lease whose mount has no registered Revoker here (another process
//     mounted it a moment ago, or its engine is being rebuilt) is not a
//     failed revocation: the worker puts it off, with waits that double up
//     to RetryMax, and logs a warning once one has waited RetryMax; Revoke
//     and RevokePrefix fail with keel.KindUnavailable and leave it as it
//     is. It is never dropped unrevoked (RevokeForce aside). Tidy queues
//     the revocation of such leases while they live.
//   - Tidy: Vault's revokes leases whose token is invalid; keel's leases
//     have no token, so Tidy repairs the manager's indexes (TidyResult).
//     A Tidy called while another runs succeeds at once, as Vault's.
//   - CountIrrevocable and ListIrrevocable key mounts by path (Vault by
//     mount accessor) and take no namespace option (keel has no
//     namespaces). ListIrrevocable's order is by lease id; Vault's limit
//     is the page's Limit, its "none" a walk over every page, its
//     lease_count the number of leases given, and its warning of a list
//     cut at its limit a page with a Next.
//
// # Concurrency
//
// A Manager is safe for concurrent use. Steps run one at a time; other
// operations run concurrently, each lease change in one transaction that
// re-reads what it decides on. Engines are called outside transactions:
// the same lease may be revoked twice when a synchronous revocation races
// the worker, or when the process dies between a revocation and its
// removal, which is why a Revoker must be idempotent. Renew stores a
// renewal only if the lease did not change while the Renewer ran.
//
// Every closure given to the store's Update is safe to run more than once.
// Start runs one goroutine; Stop cancels it and waits for it to end. A
// Step runs a goroutine per mount of a batch (its lane) and, for each of
// the lane's workers, one that makes its revoker calls (a call past
// RevokeTimeout keeps it, and the next call starts another); the worker's steps wait for them half a second at most: the
// lanes still going then outlive the step, bounded by its context and by
// RevokeTimeout per call, and Stop cancels them too and waits for them.
// What is left after Stop is only the calls of revokers that ignore their
// context, counted in their lane (see below).
//
// # Hold
//
// Hold stops the worker's revocations in every Manager of the store until
// Release (a key "hold" in the Manager's store); Options.Held starts one
// Manager held. A store restored from a copy holds leases whose time
// passed while the copy sat on disk, though their credentials may be in
// use: hold, check, then release. Due leases are kept and Get reports them
// Held; a caller's own revocations still run.
//
// # Caveats
//
// A Step that finds a due lease of a mount that is not registered puts it
// off without counting a failed attempt (another process may have just
// mounted it); register the mounts before Start all the same, or their
// leases wait a second. Unregister leaves the mount's leases in the store;
// revoke them first (RevokePrefix with sync), as Vault does on unmount.
//
// Two Managers over one store (two processes on one etcd, two tables of
// package mount) each take due leases; a lease of a mount only one of them
// knows is put off by the other, and Revokers are idempotent, so a lease
// revoked by both is revoked once in effect. Package mount keeps the
// mounts of every Manager of a store alike.
//
// The worker revokes each mount's due leases in a lane of its own
// (Options.RevokeConcurrency calls at once, each bounded by
// Options.RevokeTimeout), the mounts side by side: a mount whose backend
// fails or hangs backs off alone, its leases put off and none lost, and
// delays another mount's revocations by half a second at most, once per
// backoff (see Step). The lane closes on a timeout at once, and on
// failures when at least five of the mount's last 24 first attempts
// failed and they are more than half of them. Why not "five in a row", as
// before: with a tenth of the calls failing at random, five in a row come
// about ten times in a million calls, and each closing put the rest of the
// mount's due leases off, each rewritten to the backoff with no
// revocation; a window of 24 closes by chance about once in more than ten
// million calls at a tenth failing, while a backend that is down still
// closes the lane at its fifth call, and one that goes down after a run of
// successes within 13. A Revoker should still honour its context: one
// that ignores it is left running past the timeout, and its mount gets no
// new call until it returns. A Revoker must not call Step, which waits for
// the Step that called the Revoker.
//
// Why the worker waits for a lane half a second and no longer:
// RevokeTimeout is set for a backend's slowest honest answer (30s by
// default, as a directory's client may take that long to connect), and a
// step that waited for it would hold every later step, and so every other
// mount's leases, that long. Waiting for no lane at all would commit each
// outcome on its own. So the worker waits long enough for a healthy
// backend to answer a batch, and leaves the rest in flight. Step called
// directly waits for every call instead: a test, or a program driving
// time, knows that the revocations it asked for are done when it
// returns, whatever the machine's load. The in-flight set lives in the
// process's memory, not in the store: another process sharing the store
// sees those leases due and its own lanes decide, and a lease revoked by
// both is revoked once in effect (revokers are idempotent). A lane has
// one run going at a time, so that its mount never gets more than
// RevokeConcurrency calls at once from this process.
//
// Why a Step rests after each batch as long as the batch kept the store
// busy: on two cores, a storm of due leases had the Step's goroutine in
// the store's transactions (reading a batch, then committing its
// outcomes, milliseconds of CPU each) one batch after another, and a kv
// read woken meanwhile waited for a core until such a stretch ended (Go
// preempts a running goroutine only after 10 ms): the reads' p99 during
// a storm of 100,000 leases was 4.6 to 5.3 times the idle p99, 2.5 to 2.7
// with the rest, the storm 10 to 24 s instead of 6 to 8 (BENCHMARKS.md,
// lease storm, session 13).
// The time the revokers take is not counted: a slow backend makes the
// Step wait, not work.
package lease
