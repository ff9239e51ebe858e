package ldapengine

// After a restore: the passwords of a copy of the store are verified
// against the directory before they are served again (see "After a
// restore" in the package documentation).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/storage"
)

// Store keys of the verification after a restore, relative to the
// engine's view.
const (
	// keyRestored holds the restoredRecord while passwords of a restored
	// copy are left to verify.
	keyRestored = "restored"
	// prefixVerified holds an empty key per role and library account
	// verified since the mark: prefixVerified + GEN + "/role/" + NAME, and
	// prefixVerified + GEN + "/acct/" + the account's key under
	// prefixLibAcct.
	prefixVerified = "verified/"
)

// restoredRecord is the mark of MarkRestored.
type restoredRecord struct {
	// Gen names this mark: the verified keys of an earlier mark (in a
	// copy taken while one was verified) do not count.
	Gen string    `json:"gen"`
	At  time.Time `json:"at"`
	// RootOK and RootRefused are the bindHash of the configuration whose
	// bind password was found to bind, or to be refused.
	RootOK      string `json:"root_ok,omitempty"`
	RootRefused string `json:"root_refused,omitempty"`
}

// bindHash identifies the bind account and password of c without
// storing the password a second time.
func bindHash(c *Config) string {
	sum := sha256.Sum256([]byte(c.BindDN + "\x00" + c.BindPass))
	return hex.EncodeToString(sum[:])
}

func verifiedRoleKey(gen, name string) string { return prefixVerified + gen + "/role/" + name }

func verifiedAcctKey(gen, set, name string) string {
	return prefixVerified + gen + "/acct/" + strings.TrimPrefix(acctKey(set, name), prefixLibAcct)
}

// loadMark reads the mark of MarkRestored in tx; found is false when
// there is none.
func loadMark(tx storage.Tx) (restoredRecord, bool, error) {
	var r restoredRecord
	found, err := getJSON(tx, keyRestored, &r)
	return r, found, err
}

// unverified returns the generation of the mark when there is one and key
// (a verified key of that generation, made by verifiedKey) is absent,
// and "" otherwise: the one check of the read paths.
func unverified(tx storage.Tx, verifiedKey func(gen string) string) (string, error) {
	r, found, err := loadMark(tx)
	if err != nil || !found {
		return "", err
	}
	_, err = tx.Get(verifiedKey(r.Gen))
	if err == nil {
		return "", nil
	}
	if errors.Is(err, storage.ErrNotFound) {
		return r.Gen, nil
	}
	return "", err
}

// MarkRestored tells the engine that its store is a restored copy: the
// passwords it holds may no longer be the directory's. From then on, in
// every process of the store and after a restart, a static role's
// credential (GetStaticCred) and a library account (CheckOut) are served
// only once verified against the directory: the stored password binds, or
// else it is replaced through the bind account by the engine's usual
// write-ahead change. A static-cred read whose verification cannot reach
// the directory fails with keel.KindUnavailable (with keel.RetryAfterOf);
// a bind account whose stored password no longer binds makes the
// operations that need it fail with keel.KindConflict until the
// configuration is written again with its password. The worker (Start,
// Step) verifies every role and account and the bind account, and then
// removes the mark.
//
// MarkRestored writes one record and wakes the worker; it asks no right
// (the composition root calls it after a restore, package mount's
// Table.MarkRestored) and can only make the engine more careful. Calling it
// again starts the verification over.
func (e *Engine) MarkRestored(ctx context.Context) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.MarkRestored", "", nil, func(ctx context.Context) error {
		return e.markRestored(ctx)
	})
}

func (e *Engine) markRestored(ctx context.Context) (err error) {
	defer prefixErr(&err)
	r := restoredRecord{Gen: randid.String(randid.Base62, 16), At: e.clock.Now().UTC()}
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return putJSON(tx, keyRestored, &r)
	})
	if err != nil {
		return wrapf(err, "mark restored")
	}
	e.log.Warn("store marked restored: passwords are verified against the directory before they are served")
	e.Wake()
	return nil
}

// errBindRefused is the error of an operation that needs the bind account
// when the verification after a restore found that the directory refuses
// its stored password.
func (e *Engine) errBindRefused() error {
	return fmt.Errorf("ldapengine: %s: the directory refuses the stored password of the bind account (found when verifying a restored copy: it was probably rotated after the copy was taken); write the configuration again with the account's current password (PutConfig or UpdateConfig with BindPass): %w", e.mount, keel.KindConflict)
}

// bindConfig is loadConfig for an operation that binds as the bind
// account: it fails with errBindRefused when the verification after a
// restore found that the stored bind password no longer binds.
func (e *Engine) bindConfig(ctx context.Context) (Config, error) {
	var c Config
	var r restoredRecord
	var found, marked bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if found, err = getJSON(tx, keyConfig, &c); err != nil {
			return err
		}
		r, marked, err = loadMark(tx)
		return err
	})
	if err != nil {
		return Config{}, err
	}
	if !found {
		return Config{}, fmt.Errorf("ldapengine: %s: engine is not configured: %w", e.mount, keel.KindNotFound)
	}
	if marked && r.RootRefused != "" && r.RootRefused == bindHash(&c) {
		return Config{}, e.errBindRefused()
	}
	return c, nil
}

// verifyRoot verifies the bind account after a restore, once per stored
// bind password: it binds with it and records the outcome in the mark.
// It returns errBindRefused when the directory refuses it, and nil when
// it binds or there is no mark. A refusal is checked again at each call,
// so that a password put back in the directory is found.
func (e *Engine) verifyRoot(ctx context.Context) error {
	var c Config
	var r restoredRecord
	var found, marked bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if found, err = getJSON(tx, keyConfig, &c); err != nil {
			return err
		}
		r, marked, err = loadMark(tx)
		return err
	})
	if err != nil || !marked || !found {
		return err
	}
	h := bindHash(&c)
	if r.RootOK == h {
		return nil
	}
	err = e.dir.Bind(ctx, c.conn(), c.bindUser(), c.BindPass)
	if err != nil && !errors.Is(err, keel.KindUnauthenticated) {
		return wrapf(err, "verifying the bind account")
	}
	refused := err != nil
	if uerr := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, ok, err := loadMark(tx)
		if err != nil || !ok || cur.Gen != r.Gen {
			return err
		}
		if refused {
			cur.RootOK, cur.RootRefused = "", h
		} else {
			cur.RootOK, cur.RootRefused = h, ""
		}
		return putJSON(tx, keyRestored, &cur)
	}); uerr != nil {
		return wrapf(uerr, "verifying the bind account")
	}
	if refused {
		e.log.Error("after a restore: the directory refuses the stored bind password; write the configuration again with the account's current password")
		return e.errBindRefused()
	}
	return nil
}

// markVerified records key as verified for the mark gen, unless the mark
// changed meanwhile.
func (e *Engine) markVerified(ctx context.Context, gen, key string) error {
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		r, ok, err := loadMark(tx)
		if err != nil || !ok || r.Gen != gen {
			return err
		}
		return tx.Put(key, nil)
	})
}

// errSettling is the error of a verification that waits for a pending
// password change, which the worker settles.
func errSettling(what string, wait time.Duration) error {
	return keel.WithRetryAfter(fmt.Errorf("ldapengine: %s: a password change is being settled: %w", what, keel.KindUnavailable), wait)
}

// verifyRole verifies the static role name for the mark gen: it binds as
// the role's entry with the stored password and, when the directory
// refuses it, rotates the role (rotate, through the bind account). A
// directory that cannot be reached is an error of kind
// keel.KindUnavailable; a role whose password change is pending is left
// to the worker (keel.KindUnavailable too).
func (e *Engine) verifyRole(ctx context.Context, name, gen string) error {
	// One verification of a role at a time, from the first read to the
	// replacement: a second one waiting meanwhile finds it verified,
	// rather than replacing the password the first has just served.
	defer e.entries.lock("verify/role/" + name)()
	unlock := e.entries.lock("role/" + name)
	var rec roleRecord
	var cfg Config
	var found, pending, done, configured bool
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
		g, err := unverified(tx, func(g string) string { return verifiedRoleKey(g, name) })
		done = g != gen
		if err != nil || done {
			return err
		}
		configured, err = getJSON(tx, keyConfig, &cfg)
		return err
	})
	if err == nil && found && !done && !configured {
		err = fmt.Errorf("ldapengine: %s: engine is not configured: %w", e.mount, keel.KindNotFound)
	}
	if err != nil || !found || done {
		unlock()
		return err
	}
	if pending {
		unlock()
		return errSettling(fmt.Sprintf("static role %q", name), rec.NextRotation.Sub(e.clock.Now()))
	}
	if rec.Password != "" {
		err = e.dir.Bind(ctx, cfg.conn(), rec.EntryDN, rec.Password)
	}
	unlock()
	if err == nil {
		return e.markVerified(ctx, gen, verifiedRoleKey(gen, name))
	}
	if !errors.Is(err, keel.KindUnauthenticated) {
		return wrapf(err, "static role %q: verifying its stored password", name)
	}
	if err := e.verifyRoot(ctx); err != nil {
		return wrapf(err, "static role %q: its stored password no longer binds", name)
	}
	e.log.Warn("after a restore: a static role's stored password no longer binds; rotating it", "role", name)
	if err := e.rotate(ctx, name, e.clock.Now(), false); err != nil {
		return err
	}
	return e.markVerified(ctx, gen, verifiedRoleKey(gen, name))
}

// verifyAccount verifies the account name of the library set for the
// mark gen, as verifyRole a static role: its stored password binds, or it
// gets a new one (changePassword, which also checks it in and ends its
// lease when it was checked out: the borrower's password was dead).
func (e *Engine) verifyAccount(ctx context.Context, set, name, gen string) error {
	defer e.entries.lock("verify/library/" + set + "/" + name)() // as verifyRole
	unlock := e.entries.lock("library/" + set + "/" + name)
	var a libAccount
	var cfg Config
	var found, done, configured bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if a, found, err = loadAccount(tx, set, name); err != nil || !found {
			return err
		}
		g, err := unverified(tx, func(g string) string { return verifiedAcctKey(g, set, name) })
		done = g != gen
		if err != nil || done {
			return err
		}
		configured, err = getJSON(tx, keyConfig, &cfg)
		return err
	})
	if err == nil && found && !done && !configured {
		err = fmt.Errorf("ldapengine: %s: engine is not configured: %w", e.mount, keel.KindNotFound)
	}
	if err != nil || !found || done {
		unlock()
		return err
	}
	if pending, _ := pendingOnly(&a); pending {
		unlock()
		return errSettling(fmt.Sprintf("library set %q: account %q", set, name), e.retry)
	}
	err = e.dir.Bind(ctx, cfg.conn(), a.DN, a.Password)
	unlock()
	if err == nil {
		return e.markVerified(ctx, gen, verifiedAcctKey(gen, set, name))
	}
	if !errors.Is(err, keel.KindUnauthenticated) {
		return wrapf(err, "library set %q: account %q: verifying its stored password", set, name)
	}
	if err := e.verifyRoot(ctx); err != nil {
		return wrapf(err, "library set %q: account %q: its stored password no longer binds", set, name)
	}
	e.log.Warn("after a restore: a library account's stored password no longer binds; changing it", "set", set, "account", name, "checked_out", a.CheckedOut)
	stale := a.Password
	if _, err := e.changePassword(ctx, set, name, func(b *libAccount) (bool, error) {
		return b.Ready && b.New == "" && b.Password == stale, nil
	}); err != nil {
		return err
	}
	return e.markVerified(ctx, gen, verifiedAcctKey(gen, set, name))
}

// verifyForCheckOut verifies, in check-out order, the available accounts
// of set that are not verified yet, up to the first one that is verified:
// the one a check-out takes. It returns the generation of the mark ("" when
// there is none) and the available accounts verified for it, which alone
// a check-out may lend while the mark lasts, so that the check-out's
// transaction reads no more than the mark. When no available account
// could be verified it returns the last verification's error.
func (e *Engine) verifyForCheckOut(ctx context.Context, set string) (string, map[string]bool, error) {
	var todo []string
	var gen string
	allowed := map[string]bool{}
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		todo, gen = todo[:0], ""
		clear(allowed)
		r, ok, err := loadMark(tx)
		if err != nil || !ok {
			return err
		}
		gen = r.Gen
		rec, err := loadSet(tx, set)
		if err != nil {
			return err
		}
		for _, n := range rec.Accounts {
			a, ok, err := loadAccount(tx, set, n)
			if err != nil {
				return err
			}
			if !ok || !a.available() {
				continue
			}
			if _, err := tx.Get(verifiedAcctKey(gen, set, n)); err == nil {
				allowed[n] = true
			} else if !errors.Is(err, storage.ErrNotFound) {
				return err
			} else if len(allowed) == 0 {
				todo = append(todo, n)
			}
		}
		return nil
	})
	if err != nil || gen == "" {
		return "", nil, err
	}
	var last error
	for _, n := range todo {
		if last = e.verifyAccount(ctx, set, n, gen); last == nil {
			allowed[n] = true
			break
		}
	}
	if len(allowed) == 0 && last != nil {
		return "", nil, last
	}
	return gen, allowed, nil
}

// sweepRestored verifies, for the worker, the bind account and every
// static role and library account that the mark leaves to verify, in
// batches, and removes the mark when none is left. It returns whether a
// verification failed (logged; the worker tries again), and an error only
// for ctx or the store.
func (e *Engine) sweepRestored(ctx context.Context) (bool, error) {
	var r restoredRecord
	var marked bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		r, marked, err = loadMark(tx)
		return err
	})
	if err != nil || !marked {
		return false, err
	}
	failed := false
	if err := e.verifyRoot(ctx); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		failed = true
		e.log.Error("after a restore: the bind account is not verified", "error", err)
	}
	// Static roles, then library accounts: each batch lists up to
	// stepBatch names not verified after the last key of the previous
	// one.
	for _, part := range []string{prefixRole, prefixLibAcct} {
		after := ""
		for {
			var todo []string
			err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
				todo = todo[:0]
				return tx.Scan(part, storage.ScanOptions{After: after, KeysOnly: true}, func(key string, _ []byte) error {
					after = key
					rest := strings.TrimPrefix(key, part)
					vkey := verifiedRoleKey(r.Gen, rest)
					if part == prefixLibAcct {
						vkey = prefixVerified + r.Gen + "/acct/" + rest
					}
					if _, err := tx.Get(vkey); err == nil {
						return nil
					} else if !errors.Is(err, storage.ErrNotFound) {
						return err
					}
					todo = append(todo, rest)
					if len(todo) == stepBatch {
						return storage.StopScan
					}
					return nil
				})
			})
			if err != nil {
				return false, err
			}
			for _, rest := range todo {
				if part == prefixRole {
					err = e.verifyRole(ctx, rest, r.Gen)
				} else {
					esc, n, _ := strings.Cut(rest, "/")
					set, uerr := url.PathUnescape(esc)
					if uerr != nil {
						continue // not an account key of this version
					}
					err = e.verifyAccount(ctx, set, n, r.Gen)
				}
				if err != nil {
					if ctx.Err() != nil {
						return false, ctx.Err()
					}
					failed = true
					e.log.Error("after a restore: a password is not verified", "entry", part+rest, "error", err)
				}
			}
			if len(todo) < stepBatch {
				break
			}
		}
	}
	if failed {
		return true, nil
	}
	// Everything is verified: the mark goes (unless marked again
	// meanwhile), then the verified keys.
	var gone bool
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, ok, err := loadMark(tx)
		if err != nil || !ok || cur.Gen != r.Gen {
			return err
		}
		gone = true
		return tx.Delete(keyRestored)
	})
	if err != nil || !gone {
		return false, err
	}
	if _, err := storage.DeletePrefix(ctx, e.store, prefixVerified); err != nil {
		return false, err
	}
	e.log.Info("after a restore: every password is verified")
	return false, nil
}
