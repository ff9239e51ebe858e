// Package ratelimit implements Vault's rate-limit quotas
// (sys/quotas/rate-limit/:name, a feature of Vault's Community Edition):
// named quotas, kept in a store, that bound how many requests each client
// may make per interval under a path, and the limiter that applies them to
// every request a program serves.
//
// # Basics
//
// Open returns the Limiter of a store: Put, Get, List and Delete manage
// the quotas, each checking the caller's right; Allow, which a program
// calls before it acts on each request, with the request's path and the
// client's address, returns nil or a *QuotaError. A quota names a Path
// ("" for every request, a mount such as "secret/", or a path under one,
// "secret/app", which covers that path and the paths under it), a Rate
// (requests per Interval, one second by default) and a BlockInterval
// (zero: none).
//
// # How a request is counted
//
// As Vault's CE: the quota that applies to a request is the most specific
// one whose path covers it (the longest), and only that one: a quota on
// "secret/app" exempts its paths from a quota on "secret/" or "", and
// counts them apart. Each client address (Vault's CE groups requests by
// IP) has, per quota, a window of Interval that starts at its first
// request, and may make round(Rate) requests in it (at least one); the
// next window starts full again, at the end of the last one. A request
// beyond is refused until the window ends; with a BlockInterval, the
// refused client is refused entirely for BlockInterval from the request
// that went beyond, whatever the windows. The QuotaError says which quota,
// how many requests a window allows, and when to retry (RetryAfter, also
// carried as keel.RetryAfterOf's hint). Some paths are never limited
// (Options.Exempt; by default Vault's rate_limit_exempt_paths, such as
// "sys/health"). The limits are the process's: each process of a program
// counts its own requests, as each Vault node does.
//
// # Shared stores
//
// The quotas are one record of the store; the Limiter holds a copy, so
// that Allow reads no store. It watches the record (storage.Watch) and
// reloads it when a process changes it, so that a quota put through
// another process on a shared store (etcd) applies here too, soon after
// its commit; a quota put through this Limiter applies when Put returns.
// Reading the record on each request instead would cost a transaction per
// request, many times the check itself (see BENCHMARKS.md). A quota that
// a change leaves as it was keeps its clients' counts.
//
// # Memory
//
// The counts are kept per quota and client in memory, at most
// Options.MaxClients of them (100,000 by default; about 85 bytes each,
// and the address: BenchmarkClientTable), in 32 parts of at most
// MaxClients/32 each, a client's part chosen by its address. A client is
// forgotten once its window has ended and it is not blocked: a new window
// would start full anyway. Forgotten clients are swept as requests come,
// at most once a minute per part. In a full part, a new client takes the
// place of another: of a few sampled, the one whose window ended, or ends,
// first (such a client, seen again, starts a full window: the bound errs
// toward allowing).
//
// # Errors
//
// Errors wrap the kinds of package keel: keel.KindInvalid naming the
// fields of a malformed quota (see keel.FieldErrors) or of Open's
// arguments; keel.KindNotFound for a missing quota; keel.KindTooLarge
// for a refused request (*QuotaError) and for a store that holds 100
// quotas already; keel.KindForbidden from the Authorizer;
// keel.KindUnavailable after Close.
//
// # Rights
//
// Put asks the Authorizer for update on "sys/quotas/rate-limit/NAME",
// Get for read there, Delete for delete there, and List for list on
// "sys/quotas/rate-limit". Allow asks for nothing: it runs before the
// caller is known, as Vault's check does.
//
// # Concurrency
//
// A Limiter is safe for concurrent use. Allow takes the lock of one of 32
// parts of the client table, chosen by the client's address, and only
// when a quota applies: with no quota, it is an atomic load and a length
// check.
package ratelimit
