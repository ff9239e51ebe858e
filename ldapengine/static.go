package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// StaticRoleRequest creates or updates a static role (PutStaticRole): a
// directory entry whose password the engine rotates every RotationPeriod.
type StaticRoleRequest struct {
	// Username is the login name of the entry: required, and equal to
	// the stored one on update (or empty there: kept).
	Username string
	// DN is the entry's distinguished name: required in FlavorOpenLDAP;
	// in FlavorLDAP optional (the entry is then searched under
	// Config.UserDN by Config.UserAttr) and preferred to the search. It
	// cannot change.
	DN string
	// RotationPeriod is the time between two rotations of the password,
	// at least 5s: required on create, kept when zero on
	// update.
	RotationPeriod time.Duration
	// SkipImportRotation, on create, leaves the entry's password alone
	// until the first period has passed. Nil: the configuration's
	// SkipStaticRoleImportRotation (Vault's default for it).
	SkipImportRotation *bool
}

// StaticRole is a static role as GetStaticRole returns it.
type StaticRole struct {
	Name           string
	Username       string
	DN             string // as given; in FlavorLDAP possibly empty
	RotationPeriod time.Duration
	LastRotation   time.Time // zero before the first rotation
	// NextRotation is when the next rotation is due: a period after the
	// last, or the next attempt after a failure.
	NextRotation time.Time
	// Failures counts the attempts that failed since the last rotation,
	// and LastError says why the last one failed (the error's message,
	// without the package's "ldapengine: "); both are zero once a
	// rotation succeeds. Failed attempts are retried with a backoff
	// capped at Options.RetryInterval.
	Failures  int
	LastError string
	// Pending reports a password change whose outcome is not known yet
	// (its reply was lost, or it is under way); GetStaticCred refuses to
	// answer until it is settled.
	Pending bool
}

// StaticCred is the current credential of a static role, as
// GetStaticCred returns it.
type StaticCred struct {
	DN             string // the entry whose password rotates
	Username       string
	Password       string `keel:"secret"` // empty before the first rotation
	LastPassword   string `keel:"secret"` // the previous password; FlavorLDAP only (empty in FlavorOpenLDAP)
	LastRotation   time.Time
	RotationPeriod time.Duration
	TTL            time.Duration // until the next rotation, at least zero, in whole seconds
}

type roleRecord struct {
	// Failures counts the failed attempts since the last rotation;
	// LastError is why the last one failed.
	Failures     int           `json:"failures,omitempty"`
	LastError    string        `json:"last_error,omitempty"`
	Username     string        `json:"username"`
	DN           string        `json:"dn,omitempty"`
	EntryDN      string        `json:"entry_dn"`
	Period       time.Duration `json:"period"`
	Password     string        `json:"password,omitempty"`
	LastPassword string        `json:"last_password,omitempty"`
	LastRotation time.Time     `json:"last_rotation"`
	NextRotation time.Time     `json:"next_rotation"`
}

// walRecord is written before a password changes in the directory.
type walRecord struct {
	DN       string    `json:"dn"`
	Password string    `json:"password"`
	Old      string    `json:"old,omitempty"`
	At       time.Time `json:"at"`
}

// errNotDue stops a worker's rotation of a role that is no longer due.
var errNotDue = errors.New("ldapengine: not due")

func accountKey(dn string) string { return prefixAccount + strings.ToLower(dn) }

// PutStaticRole creates or updates the static role name. It needs create
// or update (decided in the transaction) on "MOUNT/static-role/NAME". The
// engine must be configured (keel.KindNotFound otherwise). An entry already
// managed by another role is a keel.KindConflict. On create, the password is
// rotated at once unless SkipImportRotation (or, when it is nil, the
// configuration's SkipStaticRoleImportRotation); when that first rotation
// fails, the role stays, its rotation is retried by the worker, and the
// error is returned.
func (e *Engine) PutStaticRole(ctx context.Context, name string, r StaticRoleRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.PutStaticRole", name, r, func(ctx context.Context) error {
		return e.putStaticRole(ctx, name, r)
	})
}

func (e *Engine) putStaticRole(ctx context.Context, name string, r StaticRoleRequest) (err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if err := checkNewName(staticRoleName, name); err != nil {
		return err
	}
	if r.RotationPeriod != 0 && r.RotationPeriod < minRotationPeriod {
		v.Add("RotationPeriod", "must be at least %s", minRotationPeriod)
	}
	if !e.feat.roleByUsername && r.DN == "" {
		v.Add("DN", "is required")
	}
	if err := validation(&v); err != nil {
		return err
	}
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return err
	}
	if r.SkipImportRotation == nil {
		r.SkipImportRotation = &cfg.SkipStaticRoleImportRotation
	}
	created, err := e.putRole(ctx, name, r, &cfg)
	if err != nil {
		return err
	}
	if created && !*r.SkipImportRotation {
		err = e.rotate(ctx, name, e.clock.Now(), false)
	}
	e.Wake()
	return err
}

func (e *Engine) putRole(ctx context.Context, name string, r StaticRoleRequest, cfg *Config) (bool, error) {
	entryDN := r.DN
	var created bool
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec roleRecord
		found, err := getJSON(tx, prefixRole+name, &rec)
		if err != nil {
			return err
		}
		created = !found
		c := keel.CapUpdate
		if created {
			c = keel.CapCreate
		}
		if err := keel.Authorize(ctx, e.auth, c, e.resource("static-role", name)); err != nil {
			return err
		}
		if found {
			var v keel.Validation
			if r.Username != "" && r.Username != rec.Username {
				v.Add("Username", "cannot be changed after creation")
			}
			if r.DN != "" && !strings.EqualFold(r.DN, rec.DN) {
				v.Add("DN", "cannot be changed after creation")
			}
			if err := validation(&v); err != nil {
				return err
			}
			if r.RotationPeriod == 0 || r.RotationPeriod == rec.Period {
				return nil
			}
			old := rec
			rec.Period = r.RotationPeriod
			if !rec.LastRotation.IsZero() {
				rec.NextRotation = rec.LastRotation.Add(rec.Period)
			}
			return e.putRecord(tx, name, &old, &rec)
		}
		var v keel.Validation
		if r.Username == "" {
			v.Add("Username", "is required")
		}
		if r.RotationPeriod == 0 {
			v.Add("RotationPeriod", "is required")
		}
		if err := validation(&v); err != nil {
			return err
		}
		return nil
	})
	if err != nil || !created {
		return false, err
	}
	// The entry must exist before the role is stored, checked outside any
	// transaction: ldap without dn searches under userdn by userattr.
	if entryDN == "" {
		entryDN, err = e.dir.FindDN(ctx, cfg.conn(), cfg.UserDN, cfg.UserAttr, r.Username)
		if errors.Is(err, keel.KindNotFound) {
			return false, wrapf(invalid("Username", "does not resolve to a directory entry: %s", bare(err)), "static role %q", name)
		}
	} else {
		err = e.dir.EntryExists(ctx, cfg.conn(), entryDN)
		if errors.Is(err, keel.KindNotFound) {
			return false, wrapf(invalid("DN", "is not an entry of the directory: %s", bare(err)), "static role %q", name)
		}
	}
	if err != nil {
		return false, wrapf(err, "static role %q", name)
	}
	now := e.clock.Now().UTC()
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var existing roleRecord
		found, err := getJSON(tx, prefixRole+name, &existing)
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("ldapengine: static role %q: created meanwhile: %w", name, keel.KindConflict)
		}
		var owner string
		if _, err := getJSON(tx, accountKey(entryDN), &owner); err != nil {
			return err
		}
		if owner != "" {
			return fmt.Errorf("ldapengine: static role %q: entry %q is already managed by this engine (owner %q): %w", name, entryDN, owner, keel.KindConflict)
		}
		if err := putJSON(tx, accountKey(entryDN), name); err != nil {
			return err
		}
		rec := roleRecord{Username: r.Username, DN: r.DN, EntryDN: entryDN, Period: r.RotationPeriod, NextRotation: now}
		if *r.SkipImportRotation {
			rec.NextRotation = now.Add(r.RotationPeriod)
		}
		return e.putRecord(tx, name, nil, &rec)
	})
	return err == nil, err
}

// putRecord writes rec and moves its due entry from old's.
func (e *Engine) putRecord(tx storage.Tx, name string, old, rec *roleRecord) error {
	if old != nil {
		if err := tx.Delete(dueKey(old.NextRotation, name)); err != nil {
			return err
		}
	}
	if err := putJSON(tx, prefixRole+name, rec); err != nil {
		return err
	}
	return tx.Put(dueKey(rec.NextRotation, name), nil)
}

func (rec *roleRecord) view(name string, pending bool) StaticRole {
	return StaticRole{Name: name, Username: rec.Username, DN: rec.DN, RotationPeriod: rec.Period,
		LastRotation: rec.LastRotation, NextRotation: rec.NextRotation,
		Failures: rec.Failures, LastError: rec.LastError, Pending: pending}
}

// loadRole reads the role name, and whether a write-ahead record of it is
// pending.
func (e *Engine) loadRole(ctx context.Context, name string) (roleRecord, bool, error) {
	rec, pending, _, err := e.loadRoleState(ctx, name, false)
	return rec, pending, err
}

// loadRoleState is loadRole that, with mark, also returns the generation
// of the mark of MarkRestored when the role is not verified for it (""
// otherwise).
func (e *Engine) loadRoleState(ctx context.Context, name string, mark bool) (roleRecord, bool, string, error) {
	var rec roleRecord
	var found, pending bool
	var gen string
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if found, err = getJSON(tx, prefixRole+name, &rec); err != nil || !found {
			return err
		}
		_, err = tx.Get(prefixWAL + name)
		pending = err == nil
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if !mark {
			return nil
		}
		gen, err = unverified(tx, func(g string) string { return verifiedRoleKey(g, name) })
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("ldapengine: static role %q: %w", name, keel.KindNotFound)
	}
	return rec, pending, gen, err
}

// GetStaticRole returns the static role name; a missing role is an error
// of kind keel.KindNotFound. It needs read on "MOUNT/static-role/NAME".
func (e *Engine) GetStaticRole(ctx context.Context, name string) (_ StaticRole, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetStaticRole", name, nil, func(ctx context.Context) (StaticRole, error) {
		return e.getStaticRole(ctx, name)
	})
}

func (e *Engine) getStaticRole(ctx context.Context, name string) (_ StaticRole, err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return StaticRole{}, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("static-role", name)); err != nil {
		return StaticRole{}, err
	}
	rec, pending, err := e.loadRole(ctx, name)
	if err != nil {
		return StaticRole{}, err
	}
	return rec.view(name, pending), nil
}

// ListStaticRoles returns one page of the names directly under path among
// the static roles: a role's name, or a folder ending in "/" for roles
// deeper down ("team/"), once however many roles it holds. path is "" for
// the top, or a folder ("team" or "team/"). Names come in ascending byte
// order; a name that is both a role and a folder comes twice, "team" and
// then "team/".
//
// A page holds at most r.Limit names (0 or less: 1,000);
// Items is empty, not nil, when there are none. Next is the Cursor of the
// page that follows, "" on the last page; a cursor is opaque, and stays
// valid while roles are created and deleted: the next page starts after
// the last name given, deleted or not, so that no name is given twice and
// every name that exists throughout the walk is given once. keel.All walks
// every page. A cursor that no page gave may be refused (keel.KindInvalid
// on Cursor).
//
// It needs list on "MOUNT/static-role/PATH" (PATH with its trailing "/").
// A malformed path is keel.KindInvalid on Path.
func (e *Engine) ListStaticRoles(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.ListStaticRoles", "", map[string]any{"path": path, "r": r}, func(ctx context.Context) (keel.Page[string], error) {
		return e.listStaticRoles(ctx, path, r)
	})
}

func (e *Engine) listStaticRoles(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	return e.listChildren(ctx, e.resource("static-role"), prefixRole, path, r)
}

// DeleteStaticRole removes the static role name, frees its entry for
// another role, and drops a pending rotation record (the entry keeps the
// password it has). A missing role is not an error. It needs delete on
// "MOUNT/static-role/NAME".
func (e *Engine) DeleteStaticRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.DeleteStaticRole", name, nil, func(ctx context.Context) error {
		return e.deleteStaticRole(ctx, name)
	})
}

func (e *Engine) deleteStaticRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapDelete, e.resource("static-role", name)); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec roleRecord
		found, err := getJSON(tx, prefixRole+name, &rec)
		if err != nil || !found {
			return err
		}
		for _, k := range []string{prefixRole + name, dueKey(rec.NextRotation, name), accountKey(rec.EntryDN), prefixWAL + name} {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetStaticCred returns the current credential of the static role name; a
// missing role is an error of kind keel.KindNotFound. It needs read on
// "MOUNT/static-cred/NAME". While a password change of the role is
// pending (under way, or its outcome unknown after a timeout or a lost
// connection), GetStaticCred fails with an error of kind
// keel.KindUnavailable that carries keel.RetryAfterOf: the directory may
// hold either password, and handing out one that does not bind would be
// worse than a refusal. The worker settles the change (binding with the
// new password, or setting it again) within Options.RetryInterval of the
// directory answering. After MarkRestored the stored password is served
// once it binds, or after the role is rotated when it does not; a
// directory that cannot be reached then is keel.KindUnavailable too (see
// After a restore in the package documentation).
func (e *Engine) GetStaticCred(ctx context.Context, name string) (_ StaticCred, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetStaticCred", name, nil, func(ctx context.Context) (StaticCred, error) {
		return e.getStaticCred(ctx, name)
	})
}

func (e *Engine) getStaticCred(ctx context.Context, name string) (_ StaticCred, err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return StaticCred{}, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("static-cred", name)); err != nil {
		return StaticCred{}, err
	}
	rec, pending, gen, err := e.loadRoleState(ctx, name, true)
	if err != nil {
		return StaticCred{}, err
	}
	if gen != "" && !pending {
		// A restored copy: the stored password is served once it binds
		// (or has been replaced).
		if err := e.verifyRole(ctx, name, gen); err != nil {
			if errors.Is(err, keel.KindUnavailable) {
				if _, ok := keel.RetryAfterOf(err); !ok {
					err = keel.WithRetryAfter(err, e.retry)
				}
			}
			return StaticCred{}, err
		}
		if rec, pending, _, err = e.loadRoleState(ctx, name, true); err != nil {
			return StaticCred{}, err
		}
	}
	if pending {
		// The directory may hold the old password or the new one: handing
		// out either could give a password that does not bind.
		wait := rec.NextRotation.Sub(e.clock.Now())
		return StaticCred{}, keel.WithRetryAfter(fmt.Errorf("ldapengine: static role %q: a password change is being settled: %w", name, keel.KindUnavailable), wait)
	}
	c := StaticCred{DN: rec.EntryDN, Username: rec.Username, Password: rec.Password,
		LastRotation: rec.LastRotation, RotationPeriod: rec.Period,
		TTL: max(0, rec.NextRotation.Sub(e.clock.Now())).Truncate(time.Second)}
	if e.feat.lastPassword {
		c.LastPassword = rec.LastPassword
	}
	return c, nil
}

// RotateRole rotates the password of the static role name now. It needs
// update on "MOUNT/rotate-role/NAME". On failure the role records the
// error and the worker retries, with a backoff from a second up to
// Options.RetryInterval, until the rotation succeeds.
func (e *Engine) RotateRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.RotateRole", name, nil, func(ctx context.Context) error {
		return e.rotateRole(ctx, name)
	})
}

func (e *Engine) rotateRole(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	if err := checkRoleName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, e.resource("rotate-role", name)); err != nil {
		return err
	}
	if _, _, err := e.loadRole(ctx, name); err != nil {
		return err
	}
	return e.rotate(ctx, name, e.clock.Now(), false)
}

// rotate changes the password of the role name at now: the new password
// goes to a write-ahead record (and the role is rescheduled for a retry)
// before the directory changes; the role takes it after. A pending record
// is reused, so that a password the directory may already hold is never
// lost: a reused record is first tried by binding with it, which settles a
// change whose reply was lost without changing the password again. With
// onlyDue (the worker's rotations), a role whose next rotation is after
// now is left alone: another caller rotated it after the worker listed it
// as due, and rotating it again would change the password a caller has
// just read.
//
// A failed attempt is recorded on the role (Failures, LastError) and
// retried after retryDelay; a change that was certainly not made
// (ErrNotApplied) drops the record this attempt wrote, so that the
// stored password stays the one to hand out. Either way the worker is
// woken for the role's next due time.
func (e *Engine) rotate(ctx context.Context, name string, now time.Time, onlyDue bool) error {
	e.rootMu.RLock()
	defer e.rootMu.RUnlock()
	defer e.entries.lock("role/" + name)()
	now = now.UTC()
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return wrapf(err, "static role %q", name)
	}
	candidate, err := e.generate(ctx, &cfg)
	if err != nil {
		return wrapf(err, "static role %q", name)
	}
	var wal walRecord
	var fresh bool
	var failures int
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec roleRecord
		found, err := getJSON(tx, prefixRole+name, &rec)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("ldapengine: static role %q: %w", name, keel.KindNotFound)
		}
		if onlyDue && rec.NextRotation.After(now) {
			return errNotDue
		}
		ok, err := getJSON(tx, prefixWAL+name, &wal)
		if err != nil {
			return err
		}
		fresh = !ok || !strings.EqualFold(wal.DN, rec.EntryDN)
		if fresh {
			wal = walRecord{DN: rec.EntryDN, Password: candidate, Old: rec.Password, At: now}
			if err := putJSON(tx, prefixWAL+name, &wal); err != nil {
				return err
			}
		}
		// Should the process stop before the outcome is stored, the
		// worker takes the role up again then.
		failures = rec.Failures
		old := rec
		rec.NextRotation = now.Add(e.retryDelay(failures + 1))
		return e.putRecord(tx, name, &old, &rec)
	})
	if errors.Is(err, errNotDue) {
		return nil
	}
	if err != nil {
		return wrapf(err, "static role %q: write-ahead record", name)
	}
	if !fresh && e.dir.Bind(ctx, cfg.conn(), wal.DN, wal.Password) == nil {
		err = nil // an earlier attempt made the change
	} else {
		err = e.dir.SetPassword(ctx, cfg.conn(), wal.DN, wal.Password)
	}
	if err != nil {
		return e.rotationFailed(ctx, name, now, wal, fresh && errors.Is(err, ErrNotApplied), failures+1, err)
	}
	var next time.Time
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec roleRecord
		found, err := getJSON(tx, prefixRole+name, &rec)
		if err != nil {
			return err
		}
		var cur walRecord
		ok, err := getJSON(tx, prefixWAL+name, &cur)
		if err != nil {
			return err
		}
		if found && !ok && rec.Password == wal.Password {
			// Another caller (the worker of another process, which
			// took up the same record) stored this very change: done.
			next = rec.NextRotation
			return nil
		}
		if !found || !ok || cur.Password != wal.Password {
			return fmt.Errorf("ldapengine: static role %q: changed during rotation: %w", name, keel.KindConflict)
		}
		old := rec
		if rec.Password != wal.Password {
			rec.LastPassword, rec.Password = rec.Password, wal.Password
		}
		rec.LastRotation = now
		rec.NextRotation = now.Add(rec.Period)
		rec.Failures, rec.LastError = 0, ""
		next = rec.NextRotation
		if err := e.putRecord(tx, name, &old, &rec); err != nil {
			return err
		}
		return tx.Delete(prefixWAL + name)
	})
	if err != nil {
		e.worker.WakeFor(now.Add(e.retryDelay(failures + 1)))
		return wrapf(err, "static role %q: the directory holds the new password, storing it failed (retried in %s)", name, e.retry)
	}
	e.worker.WakeFor(next)
	e.log.Info("static role rotated", "role", name)
	return nil
}

// rotationFailed records the failed attempt number failures to rotate
// the role name with wal (dropping wal when notMade: the directory
// certainly does not hold it), schedules the next attempt and wakes the
// worker for it. It returns cause, wrapped.
func (e *Engine) rotationFailed(ctx context.Context, name string, now time.Time, wal walRecord, notMade bool, failures int, cause error) error {
	delay := e.retryDelay(failures)
	next := now.Add(delay)
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec roleRecord
		found, err := getJSON(tx, prefixRole+name, &rec)
		if err != nil || !found {
			return err
		}
		old := rec
		rec.Failures, rec.LastError = failures, bare(cause)
		rec.NextRotation = next
		if err := e.putRecord(tx, name, &old, &rec); err != nil {
			return err
		}
		var cur walRecord
		ok, err := getJSON(tx, prefixWAL+name, &cur)
		if err != nil || !notMade || !ok || cur.Password != wal.Password {
			return err
		}
		return tx.Delete(prefixWAL + name)
	})
	if err != nil {
		e.log.Error("static role: recording a failed rotation failed", "role", name, "error", err)
	}
	e.worker.WakeFor(next)
	return wrapf(cause, "static role %q: rotation failed, retried in %s", name, delay.Round(time.Millisecond))
}

// retryDelay is the wait before attempt number failures+1 of a rotation
// that failed failures times: from a second (or RetryInterval when
// shorter), doubled at each failure, capped at RetryInterval, then
// jittered down by up to a fifth so that roles that failed together do
// not retry together.
func (e *Engine) retryDelay(failures int) time.Duration {
	d := min(time.Second, e.retry)
	for i := 1; i < failures && d < e.retry; i++ {
		d *= 2
	}
	d = min(d, e.retry)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// RotateRoot changes the bind account's password to a new generated one
// that can never be read back. It needs update on "MOUNT/rotate-root". The
// new password is stored in a write-ahead record before the directory
// changes; when storing it in the configuration fails, the old password is
// put back in the directory. A change whose outcome is not known (a
// timeout, a lost reply), or a record left by a crash, is settled by the
// next RotateRoot or Step, which keeps the password the directory accepts;
// the worker is woken to try within Options.RetryInterval. A directory
// that refuses the configured bind account is an error of kind
// keel.KindConflict that names the directory's answer.
func (e *Engine) RotateRoot(ctx context.Context) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.RotateRoot", "", nil, func(ctx context.Context) error {
		return e.rotateRoot(ctx)
	})
}

func (e *Engine) rotateRoot(ctx context.Context) (err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, e.resource("rotate-root")); err != nil {
		return err
	}
	if err := e.recoverRoot(ctx); err != nil {
		return err
	}
	e.rootMu.Lock()
	defer e.rootMu.Unlock()
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return err
	}
	pw, err := e.generate(ctx, &cfg)
	if err != nil {
		return err
	}
	wal := walRecord{DN: cfg.BindDN, Password: pw, Old: cfg.BindPass, At: e.clock.Now().UTC()}
	if err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return putJSON(tx, keyRootWAL, &wal)
	}); err != nil {
		return wrapf(err, "rotate-root: write-ahead record")
	}
	if err := e.dir.SetPassword(ctx, cfg.conn(), cfg.BindDN, pw); err != nil {
		if errors.Is(err, ErrNotApplied) {
			// Nothing changed: the record would only make the worker
			// check what is known already.
			_ = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Delete(keyRootWAL) })
			return wrapf(err, "rotate-root")
		}
		e.worker.WakeFor(e.clock.Now().Add(e.retry))
		return wrapf(err, "rotate-root: the outcome is not known; the worker settles it")
	}
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var cur Config
		found, err := getJSON(tx, keyConfig, &cur)
		if err != nil {
			return err
		}
		if !found || cur.BindDN != cfg.BindDN || cur.BindPass != cfg.BindPass {
			return fmt.Errorf("ldapengine: rotate-root: configuration changed meanwhile: %w", keel.KindConflict)
		}
		cur.BindPass = pw
		cur.LastBindPasswordRotation = e.clock.Now().UTC()
		if err := putJSON(tx, keyConfig, &cur); err != nil {
			return err
		}
		return tx.Delete(keyRootWAL)
	})
	if err == nil {
		e.log.Info("root password rotated")
		return nil
	}
	// Put the old password back, bound with the new one.
	back := cfg
	back.BindPass = pw
	if rerr := e.dir.SetPassword(ctx, back.conn(), cfg.BindDN, cfg.BindPass); rerr != nil {
		e.log.Error("rotate-root: putting the old password back failed; the write-ahead record keeps the new one", "error", rerr)
		return wrapf(err, "rotate-root: storing the new password, and the old one could not be put back (%s)", bare(rerr))
	}
	_ = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Delete(keyRootWAL) })
	return wrapf(err, "rotate-root: storing the new password failed, the old one is back")
}

// recoverRoot settles a root write-ahead record: the password the bind
// account accepts is kept. It holds rootMu: no other change uses the bind
// password meanwhile.
func (e *Engine) recoverRoot(ctx context.Context) error {
	e.rootMu.Lock()
	defer e.rootMu.Unlock()
	var wal walRecord
	var cfg Config
	var found, hasCfg bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if found, err = getJSON(tx, keyRootWAL, &wal); err != nil || !found {
			return err
		}
		hasCfg, err = getJSON(tx, keyConfig, &cfg)
		return err
	})
	if err != nil || !found {
		return err
	}
	drop := func(pw string) error {
		return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			var cur Config
			ok, err := getJSON(tx, keyConfig, &cur)
			if err != nil {
				return err
			}
			if ok && pw != "" && cur.BindDN == wal.DN && cur.BindPass == wal.Old {
				cur.BindPass = pw
				cur.LastBindPasswordRotation = e.clock.Now().UTC()
				if err := putJSON(tx, keyConfig, &cur); err != nil {
					return err
				}
			}
			return tx.Delete(keyRootWAL)
		})
	}
	if !hasCfg || cfg.BindDN != wal.DN {
		return drop("")
	}
	err = e.dir.Bind(ctx, cfg.conn(), cfg.bindUser(), wal.Password)
	if err == nil {
		return drop(wal.Password)
	}
	if !errors.Is(err, keel.KindUnauthenticated) {
		return wrapf(err, "rotate-root: settling an earlier rotation")
	}
	if err := e.dir.Bind(ctx, cfg.conn(), cfg.bindUser(), cfg.BindPass); err != nil {
		return wrapf(err, "rotate-root: settling an earlier rotation: neither password binds")
	}
	return drop("")
}
