package lease

import "time"

// Lease is a lease as the manager stores it. Instants are in UTC with
// nanosecond precision. The zero Lease is no lease.
type Lease struct {
	// ID is "<Path>/<24 base62 characters>": the first 7 tell the
	// issue time (ids of a path sort by it), the other 17 are random.
	ID string
	// Path is the request path the lease was issued for, such as
	// "ldap/creds/app".
	Path string
	// Mount is the registered mount Path lay under at issue, such as
	// "ldap/".
	Mount string
	// IssueTime is when the lease was issued.
	IssueTime time.Time
	// ExpireTime is when the lease ends. A lease whose ExpireTime is not
	// after the current time is expired: reads treat it as gone, even
	// before the worker has revoked it, unless a revocation of it has
	// failed (see Manager.Get). A queued revocation sets it to the
	// time of the request.
	ExpireTime time.Time
	// LastRenewalTime is when the lease was last renewed; zero until then
	// (an adapter renders it as null).
	LastRenewalTime time.Time
	// MaxTTL caps the life of the lease, counted from IssueTime: no
	// renewal extends it past IssueTime+MaxTTL.
	MaxTTL time.Duration
	// Renewable reports whether Renew may extend the lease.
	Renewable bool
	// Token marks the lease of a token, which Renew refuses.
	Token bool
	// Data is the engine's private data, given back to its Revoker and
	// Renewer; nil when empty.
	Data []byte `keel:"secret"`
	// Irrevocable reports that revoking the lease failed for good (after
	// Options.MaxAttempts attempts, or a Permanent error). The worker
	// still tries every Options.IrrevocableRetry; RevokeForce removes it.
	Irrevocable bool
	// Attempts counts the failed revocation attempts.
	Attempts int
	// LastError is the error of the last failed attempt, cut to at most
	// 240 bytes of valid UTF-8.
	LastError string
	// Held reports, in Get's answer, that the lease is due but the
	// worker's revocations are held (see Manager.Hold). It is not stored.
	Held bool
	// NextAttempt is when the worker next tries to revoke the lease: its
	// entry in the expiry index. It is never zero: ExpireTime while the
	// lease lives; the time of the request for a queued revocation; the
	// time of the next retry after a failure, or of the next irrevocable
	// retry.
	NextAttempt time.Time
}

// TTL returns how long the lease has left at now: ExpireTime-now, or 0 when
// that is negative. Rounding to whole seconds is the adapter's job.
func (l Lease) TTL(now time.Time) time.Duration {
	return max(l.ExpireTime.Sub(now), 0)
}
