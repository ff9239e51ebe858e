package vault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// The keys of the mount table and of mounted engines' data in the store.
const (
	mountTableKey = "sys/mounts"
	kvDataPrefix  = "kv/" // + mount UUID + "/"
)

// mountEntry is one row of the mount table, as stored.
type mountEntry struct {
	Path        string            `json:"path"` // with a trailing "/"
	Type        string            `json:"type"`
	Description string            `json:"description"`
	UUID        string            `json:"uuid"`
	Accessor    string            `json:"accessor"`
	Options     map[string]string `json:"options"`
	DefaultTTL  time.Duration     `json:"default_ttl"`
	MaxTTL      time.Duration     `json:"max_ttl"`
}

// leased reports whether reads of the mount issue leases (Vault's
// leased_passthrough).
func (m *mountEntry) leased() bool {
	b, _ := strconv.ParseBool(m.Options["leased_passthrough"])
	return b
}

// mounted is a mount with its engine: engine for a kv mount, ldap for an
// ldap or openldap one.
type mounted struct {
	entry  mountEntry
	engine *kv.Engine
	ldap   *ldapengine.Engine
}

// loadMounts reads the mount table, creating the default "secret/" kv,
// "ldap/" and "openldap/" mounts on the first start, and builds the
// engines.
func (h *Handler) loadMounts(ctx context.Context) error {
	var table []mountEntry
	err := h.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		table = nil
		v, err := tx.Get(mountTableKey)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			table = []mountEntry{
				newMountEntry("secret/", "kv", "key/value secret storage", map[string]string{"version": "1"}),
				newMountEntry("ldap/", "ldap", "ldap secrets engine", nil),
				newMountEntry("openldap/", "openldap", "openldap secrets engine", nil),
			}
			b, err := json.Marshal(table)
			if err != nil {
				return err
			}
			return tx.Put(mountTableKey, b)
		case err != nil:
			return err
		}
		return json.Unmarshal(v, &table)
	})
	if err != nil {
		return fmt.Errorf("vault adapter: mount table: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range table {
		if err := h.startMountLocked(e); err != nil {
			return err
		}
	}
	return nil
}

func newMountEntry(path, typ, description string, options map[string]string) mountEntry {
	acc := make([]byte, 4)
	rand.Read(acc)
	if options == nil {
		options = map[string]string{}
	}
	return mountEntry{
		Path: path, Type: typ, Description: description,
		UUID: uuid.NewString(), Accessor: typ + "_" + hex.EncodeToString(acc),
		Options: options,
	}
}

// startMountLocked builds the engine of e (starting the rotation worker of
// an ldap or openldap engine) and registers it with the lease manager;
// h.mu is held.
func (h *Handler) startMountLocked(e mountEntry) error {
	if isLDAPType(e.Type) {
		return h.startLDAPMountLocked(e)
	}
	opts := &kv.Options{Authorizer: h.authorizer}
	if e.DefaultTTL > 0 {
		opts.DefaultTTL = e.DefaultTTL
	}
	if e.leased() {
		opts.Leaser = leaser{h.leases}
	}
	eng, err := kv.New(storage.Sub(h.store, kvDataPrefix+e.UUID+"/"), strings.TrimSuffix(e.Path, "/"), opts)
	if err != nil {
		return err
	}
	// kv leases are advisory: revoking one has nothing to undo.
	noop := lease.RevokerFunc(func(context.Context, lease.Lease) error { return nil })
	if err := h.leases.Register(e.Path, noop, &lease.MountConfig{DefaultTTL: e.DefaultTTL, MaxTTL: e.MaxTTL}); err != nil {
		return err
	}
	h.mounts[e.Path] = &mounted{entry: e, engine: eng}
	return nil
}

// leaser issues the leases of a leased kv mount.
type leaser struct{ m *lease.Manager }

func (l leaser) IssueLease(ctx context.Context, path string, ttl time.Duration) (string, time.Duration, error) {
	le, err := l.m.Issue(ctx, lease.IssueRequest{Path: path, TTL: ttl, Renewable: true})
	return le.ID, le.ExpireTime.Sub(le.IssueTime), err
}

// route finds the mount of a request path ("secret/a/b"): the longest mount
// path that prefixes it, and the rest.
func (h *Handler) route(p string) (*mounted, string, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var best *mounted
	for path, m := range h.mounts {
		if (strings.HasPrefix(p, path) || p+"/" == path) && (best == nil || len(path) > len(best.entry.Path)) {
			best = m
		}
	}
	if best == nil {
		return nil, "", false
	}
	rest, _ := strings.CutPrefix(p, best.entry.Path)
	if p+"/" == best.entry.Path {
		rest = ""
	}
	return best, rest, true
}

// mountOutput is a mount as GET sys/mounts shows it.
type mountOutput struct {
	UUID        string            `json:"uuid"`
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Accessor    string            `json:"accessor"`
	Config      mountConfigOutput `json:"config"`
	Options     map[string]string `json:"options"`
	Local       bool              `json:"local"`
	SealWrap    bool              `json:"seal_wrap"`
}

type mountConfigOutput struct {
	DefaultLeaseTTL int64 `json:"default_lease_ttl"`
	MaxLeaseTTL     int64 `json:"max_lease_ttl"`
	ForceNoCache    bool  `json:"force_no_cache"`
}

func (e *mountEntry) output() mountOutput {
	return mountOutput{
		UUID: e.UUID, Type: e.Type, Description: e.Description, Accessor: e.Accessor,
		Config:  mountConfigOutput{DefaultLeaseTTL: int64(e.DefaultTTL / time.Second), MaxLeaseTTL: int64(e.MaxTTL / time.Second)},
		Options: e.Options,
	}
}

// listMounts answers GET sys/mounts.
func (h *Handler) listMounts(w http.ResponseWriter, r *http.Request) {
	if err := keel.Authorize(r.Context(), h.authorizer, keel.CapRead, "sys/mounts"); err != nil {
		writeError(w, err)
		return
	}
	h.mu.RLock()
	data := make(map[string]any, len(h.mounts))
	for path, m := range h.mounts {
		data[path] = m.entry.output()
	}
	h.mu.RUnlock()
	writeJSON(w, http.StatusOK, newResponse(data))
}

// mountInput is the body of POST sys/mounts/:path.
type mountInput struct {
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Options     map[string]string `json:"options"`
	Config      struct {
		DefaultLeaseTTL string `json:"default_lease_ttl"`
		MaxLeaseTTL     string `json:"max_lease_ttl"`
	} `json:"config"`
}

// mount answers POST sys/mounts/:path: enable a kv version 1, ldap or
// openldap engine.
func (h *Handler) mount(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.PathValue("path"), "/") + "/"
	if err := keel.Authorize(r.Context(), h.authorizer, keel.CapCreate, "sys/mounts/"+path); err != nil {
		writeError(w, err)
		return
	}
	var in mountInput
	if err := decodeBody(w, r, &in); err != nil {
		writeError(w, err)
		return
	}
	e, err := checkMountInput(path, &in)
	if err != nil {
		writeError(w, err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for p := range h.mounts {
		if strings.HasPrefix(p, path) || strings.HasPrefix(path, p) {
			writeError(w, keel.Invalid("path", "existing mount at %s", p))
			return
		}
	}
	if err := h.saveTableLocked(r.Context(), func(t []mountEntry) []mountEntry { return append(t, e) }); err != nil {
		writeError(w, err)
		return
	}
	if err := h.startMountLocked(e); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func checkMountInput(path string, in *mountInput) (mountEntry, error) {
	var v keel.Validation
	if path == "/" || strings.Contains(path, "//") || strings.HasPrefix(path, "sys/") {
		v.Add("path", "cannot mount at %q", path)
	}
	typ := in.Type
	if typ != "kv" && !isLDAPType(typ) {
		v.Add("type", "only kv, ldap and openldap engines can be mounted here, not %q", in.Type)
	}
	opts := map[string]string{"version": "1"}
	if isLDAPType(typ) {
		opts = map[string]string{}
	}
	for k, val := range in.Options {
		switch {
		case isLDAPType(typ):
			v.Add("options."+k, "unknown option")
		case k == "version":
			if val != "1" && val != "" {
				v.Add("options.version", "only kv version 1 is available")
			}
		case k == "leased_passthrough":
			if _, err := strconv.ParseBool(val); err != nil {
				v.Add("options.leased_passthrough", "must be a boolean")
			}
			opts[k] = val
		default:
			v.Add("options."+k, "unknown option")
		}
	}
	e := newMountEntry(path, typ, in.Description, opts)
	var err error
	if e.DefaultTTL, err = parseTTL(in.Config.DefaultLeaseTTL); err != nil {
		v.Add("config.default_lease_ttl", "%v", err)
	}
	if e.MaxTTL, err = parseTTL(in.Config.MaxLeaseTTL); err != nil {
		v.Add("config.max_lease_ttl", "%v", err)
	}
	return e, v.Err()
}

// parseTTL reads a TTL as Vault does: empty is zero (the system value),
// integer seconds, or a duration string.
func parseTTL(s string) (time.Duration, error) {
	if s == "" || s == "system" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("must not be negative")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}

// unmount answers DELETE sys/mounts/:path: its leases are revoked, the
// mount leaves the table, then its data is deleted.
func (h *Handler) unmount(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.PathValue("path"), "/") + "/"
	if err := keel.Authorize(r.Context(), h.authorizer, keel.CapDelete, "sys/mounts/"+path); err != nil {
		writeError(w, err)
		return
	}
	h.mu.Lock()
	m, ok := h.mounts[path]
	if !ok {
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent) // as Vault: unmounting nothing succeeds
		return
	}
	err := h.saveTableLocked(r.Context(), func(t []mountEntry) []mountEntry {
		return slices.DeleteFunc(t, func(e mountEntry) bool { return e.Path == path })
	})
	if err == nil {
		delete(h.mounts, path)
	}
	h.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	// Leases of the mount go first, then its data. Both are done with
	// the server's rights: the caller's were checked on the mount.
	ctx := keel.WithPrincipal(context.WithoutCancel(r.Context()), keel.Principal{ID: "vault adapter", Policies: []string{keel.RootPolicy}})
	if err := h.leases.RevokeForce(ctx, path); err != nil {
		h.logger.Warn("unmount: revoking leases", "mount", path, "err", err)
	}
	h.leases.Unregister(path)
	prefix := kvDataPrefix + m.entry.UUID + "/"
	if m.ldap != nil {
		m.ldap.Stop()
		prefix = ldapengine.StorePrefix(m.ldap.Mount())
	}
	if err := deletePrefix(ctx, h.store, prefix); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// saveTableLocked rewrites the stored mount table with change applied;
// h.mu is held.
func (h *Handler) saveTableLocked(ctx context.Context, change func([]mountEntry) []mountEntry) error {
	return h.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var table []mountEntry
		v, err := tx.Get(mountTableKey)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(v, &table); err != nil {
			return err
		}
		b, err := json.Marshal(change(table))
		if err != nil {
			return err
		}
		return tx.Put(mountTableKey, b)
	})
}

// deletePrefix deletes every key under prefix, a thousand per transaction.
func deletePrefix(ctx context.Context, s storage.Store, prefix string) error {
	for {
		n := 0
		err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			var keys []string
			err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
				keys = append(keys, k)
				if len(keys) == 1000 {
					return storage.StopScan
				}
				return nil
			})
			if err != nil {
				return err
			}
			n = len(keys)
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || n < 1000 {
			return err
		}
	}
}
