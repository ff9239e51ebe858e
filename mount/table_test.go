package mount_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

var ctx = context.Background()

// open opens a table over store with Vault's default mounts and closes it
// with the test.
func open(t testing.TB, store storage.Store) *mount.Table {
	t.Helper()
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults(), Directory: ldaptest.NewDirectory()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	return table
}

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, openStore everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, openStore everystore.Open) {
		t.Parallel()
		fn(t, openStore)
	})
}

func wantKind(t testing.TB, err error, k keel.Kind) {
	t.Helper()
	if keel.KindOf(err) != k {
		t.Fatalf("error %v: kind %v, want %v", err, keel.KindOf(err), k)
	}
}

// served lists the paths the table serves.
func served(t testing.TB, table *mount.Table) []string {
	t.Helper()
	list, err := table.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list {
		if m.Served() {
			out = append(out, m.Path)
		}
	}
	return out
}

// TestEnableRefusals: every refused Enable answers Invalid and leaves the
// store as it was, and the table opens again with every mount served (the
// poisoned mounts of the issue bricked the example server).
func TestEnableRefusals(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		if _, err := table.Enable(ctx, mount.EnableRequest{Path: "team/a/", Type: "kv"}); err != nil {
			t.Fatal(err)
		}
		before := storagetest.Dump(t, store)
		for name, req := range map[string]mount.EnableRequest{
			"max ttl above the system's":  {Path: "poison1", Type: "kv", MaxTTL: 100000 * time.Hour},
			"default above max":           {Path: "poison2", Type: "kv", DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour},
			"negative ttl":                {Path: "poison3", Type: "kv", DefaultTTL: -time.Second},
			"dots":                        {Path: "a..b", Type: "kv"},
			"control character":           {Path: "a\x01b", Type: "kv"},
			"delete character":            {Path: "x\x7f", Type: "kv"},
			"space":                       {Path: "a b", Type: "kv"},
			"dot segment":                 {Path: "a/./b", Type: "kv"},
			"empty segment":               {Path: "a//b", Type: "kv"},
			"empty":                       {Path: "", Type: "kv"},
			"too long":                    {Path: strings.Repeat("a", 256), Type: "kv"},
			"reserved":                    {Path: "sys/x", Type: "kv"},
			"existing":                    {Path: "secret", Type: "kv"},
			"below a mount":               {Path: "secret/inner", Type: "kv"},
			"above a mount":               {Path: "team", Type: "kv"},
			"unknown type":                {Path: "x", Type: "database"},
			"kv version 2":                {Path: "x", Type: "kv", Options: map[string]string{"version": "2"}},
			"leased_passthrough not bool": {Path: "x", Type: "kv", Options: map[string]string{"leased_passthrough": "maybe"}},
			"ldap option":                 {Path: "x", Type: "ldap", Options: map[string]string{"version": "1"}},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := table.Enable(ctx, req)
				wantKind(t, err, keel.KindInvalid)
				if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
					t.Fatal("a refused Enable changed the store")
				}
			})
		}
		table.Close()
		again := open(t, store)
		if got, want := strings.Join(served(t, again), " "), "ldap/ openldap/ secret/ team/a/"; got != want {
			t.Fatalf("served after reopening: %q, want %q", got, want)
		}
	})
}

// TestEnableReportsEveryField: one refusal names each field that breaks a
// rule.
func TestEnableReportsEveryField(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		table := open(t, openStore(t))
		_, err := table.Enable(ctx, mount.EnableRequest{Path: "a..b", Type: "kv", Options: map[string]string{"version": "2"}, MaxTTL: -1})
		var fields []string
		for _, fe := range keel.FieldErrors(err) {
			fields = append(fields, fe.Field)
		}
		if got := strings.Join(fields, " "); got != `Path Options["version"]` && got != `Path Options["version"] MaxTTL` {
			t.Fatalf("fields %q", got)
		}
	})
}

// TestStoredEntryThatNoLongerValidates: entries written by hand are listed
// with their error and not served; the others are; Disable removes them.
func TestStoredEntryThatNoLongerValidates(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		table.Close()
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			raw, err := tx.Get("sys/mounts")
			if err != nil {
				return err
			}
			var entries []map[string]any
			if err := json.Unmarshal(raw, &entries); err != nil {
				return err
			}
			entries = append(entries,
				map[string]any{"path": "a..b/", "type": "kv", "uuid": "u1", "options": map[string]string{"version": "1"}},
				map[string]any{"path": "db/", "type": "database", "uuid": "u2"},
				map[string]any{"path": "long/", "type": "kv", "uuid": "u3", "max_ttl": int64(100000 * time.Hour)},
			)
			raw, _ = json.Marshal(entries)
			return tx.Put("sys/mounts", raw)
		})
		if err != nil {
			t.Fatal(err)
		}
		table = open(t, store)
		list, err := table.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		broken := map[string]bool{}
		for _, m := range list {
			if m.Err != nil {
				broken[m.Path] = true
			}
		}
		if len(broken) != 3 || !broken["a..b/"] || !broken["db/"] || !broken["long/"] {
			t.Fatalf("broken mounts %v", broken)
		}
		if got := strings.Join(served(t, table), " "); got != "ldap/ openldap/ secret/" {
			t.Fatalf("served %q", got)
		}
		if _, _, ok := table.Route("db/x"); ok {
			t.Fatal("a broken mount is routed")
		}
		if err := table.Disable(ctx, "db/"); err != nil {
			t.Fatal(err)
		}
		if _, err := table.Get(ctx, "db/"); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("Get after Disable: %v", err)
		}
	})
}

// fill writes n secrets to the leased kv mount at path and reads each
// once, which issues n leases, with 16 writers at a time.
func fill(t testing.TB, table *mount.Table, path string, n int) {
	t.Helper()
	if _, err := table.Enable(ctx, mount.EnableRequest{Path: path, Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	m, _, _ := table.Route(path)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				p := fmt.Sprintf("s%04d", i)
				if err := m.KV.Write(ctx, p, map[string]any{"v": i, "ttl": "1h"}); err != nil {
					errs <- err
					return
				}
				if _, err := m.KV.Read(ctx, p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// leftOf returns the keys of the mount's data and leases left in store.
func leftOf(t testing.TB, store storage.Store, e mount.Entry) []string {
	t.Helper()
	var left []string
	err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, p := range []string{"kv/" + e.UUID + "/", "lease/id/" + e.Path, "sys/mount-guards/" + e.UUID} {
			err := tx.Scan(p, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
				left = append(left, k)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// TestDisableLeavesNothing: a mount with 1,000 secrets and 1,000 leases is
// removed whole on every store, etcd's limits included; a new mount at the
// same path starts empty.
func TestDisableLeavesNothing(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		fill(t, table, "big/", 1000)
		m, err := table.Get(ctx, "big/")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(leftOf(t, store, m.Entry)); n != 2001 { // and the guard
			t.Fatalf("%d keys before Disable, want 2001", n)
		}
		if err := table.Disable(ctx, "big"); err != nil {
			t.Fatal(err)
		}
		if left := leftOf(t, store, m.Entry); len(left) != 0 {
			t.Fatalf("%d keys left, first %q", len(left), left[0])
		}
		if _, err := table.Enable(ctx, mount.EnableRequest{Path: "big/", Type: "kv"}); err != nil {
			t.Fatal(err)
		}
		again, _, _ := table.Route("big/")
		if keys, err := again.KV.List(ctx, "", keel.ListRequest{}); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("a new mount at the same path lists %q (%v)", keys, err)
		}
	})
}

// TestDisableResumes: a Disable that fails halfway leaves the mount marked
// and not served, its path taken; Disable again, or the next Open,
// finishes the removal.
func TestDisableResumes(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		boom := errors.New("disk on fire")
		for name, fail := range map[string]func(fs *faultstore.Store){
			"deleting the data":   func(fs *faultstore.Store) { fs.Fail(faultstore.OpDelete, "kv/", 1, boom) },
			"revoking the leases": func(fs *faultstore.Store) { fs.Fail(faultstore.OpDelete, "lease/", 1, boom) },
			"marking the mount":   func(fs *faultstore.Store) { fs.Fail(faultstore.OpPut, "sys/mounts", 1, boom) },
		} {
			t.Run(name, func(t *testing.T) {
				store := openStore(t)
				fs := faultstore.New(store)
				table := open(t, fs)
				fill(t, table, "big/", 300)
				m, _ := table.Get(ctx, "big/")
				fail(fs)
				if err := table.Disable(ctx, "big/"); !errors.Is(err, boom) {
					t.Fatalf("Disable = %v, want the injected error", err)
				}
				fs.Reset()
				got, err := table.Get(ctx, "big/")
				if name == "marking the mount" {
					if err != nil || !got.Served() {
						t.Fatalf("a Disable refused before the mark: %+v, %v", got, err)
					}
				} else {
					if err != nil || got.Served() || !got.Disabling {
						t.Fatalf("after a failed Disable: %+v, %v; want marked and not served", got, err)
					}
					if _, err := table.Enable(ctx, mount.EnableRequest{Path: "big/", Type: "kv"}); keel.KindOf(err) != keel.KindInvalid {
						t.Fatalf("Enable at a path being disabled: %v", err)
					}
				}
				table.Close()
				// A restart finishes the removal (or, when nothing was
				// marked, Disable does).
				table = open(t, store)
				if name == "marking the mount" {
					if err := table.Disable(ctx, "big/"); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := table.Get(ctx, "big/"); keel.KindOf(err) != keel.KindNotFound {
					t.Fatalf("mount still in the table: %v", err)
				}
				if left := leftOf(t, store, m.Entry); len(left) != 0 {
					t.Fatalf("%d keys left, first %q", len(left), left[0])
				}
			})
		}
	})
}

// TestMountsAreJoinedByConstruction: the wiring mistakes of a program that
// builds engines by hand cannot happen through a table: two kv mounts do
// not share secrets nor touch lease records, a leased mount's reads give
// leases Lookup finds, an ldap check-out's lease is found and its
// revocation checks the account in.
func TestMountsAreJoinedByConstruction(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		for _, p := range []string{"one/", "two/"} {
			if _, err := table.Enable(ctx, mount.EnableRequest{Path: p, Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
				t.Fatal(err)
			}
		}
		one, _, _ := table.Route("one/x")
		two, _, _ := table.Route("two/x")
		if err := one.KV.Write(ctx, "id/x", map[string]any{"k": "one"}); err != nil {
			t.Fatal(err)
		}
		if _, err := two.KV.Read(ctx, "id/x"); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("two/ sees one/'s secret: %v", err)
		}
		s, err := one.KV.Read(ctx, "id/x")
		if err != nil {
			t.Fatal(err)
		}
		if l, err := table.Leases().Get(ctx, s.LeaseID); err != nil || l.ID != s.LeaseID {
			t.Fatalf("Lookup of a leased read's lease: %+v, %v", l, err)
		}
		dump := storagetest.Dump(t, store)
		for k := range dump {
			if strings.HasPrefix(k, "lease/") && strings.Contains(dump[k], `"k":"one"`) {
				t.Fatalf("a kv write landed in the lease records: %s", k)
			}
		}
	})
}

// TestCloseThenEnable: after Close the table still routes, and Enable,
// Disable and Tune are refused (Unavailable) with the store unchanged: a
// closed table no longer follows the stored one, so a change through it
// would be served by nobody here.
func TestCloseThenEnable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		table.Close()
		before := storagetest.Dump(t, store)
		_, err := table.Enable(ctx, mount.EnableRequest{Path: "corp", Type: "ldap"})
		wantKind(t, err, keel.KindUnavailable)
		wantKind(t, table.Disable(ctx, "secret/"), keel.KindUnavailable)
		hour := time.Hour
		_, err = table.Tune(ctx, "secret/", mount.TuneRequest{DefaultTTL: &hour})
		wantKind(t, err, keel.KindUnavailable)
		if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
			t.Fatal("a refused change after Close changed the store")
		}
		if m, rest, ok := table.Route("ldap/config"); !ok || m.LDAP == nil || rest != "config" {
			t.Fatalf("Route after Close: %+v %q %v", m, rest, ok)
		}
		table.Close() // twice is fine
	})
}

// TestTune: TTLs are checked as Enable checks them, and the rebuilt engine
// uses the new ones.
func TestTune(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		table := open(t, openStore(t))
		tooLong := 100000 * time.Hour
		_, err := table.Tune(ctx, "secret", mount.TuneRequest{MaxTTL: &tooLong})
		wantKind(t, err, keel.KindInvalid)
		hour := time.Hour
		e, err := table.Tune(ctx, "secret/", mount.TuneRequest{DefaultTTL: &hour})
		if err != nil || e.DefaultTTL != time.Hour {
			t.Fatalf("Tune = %+v, %v", e, err)
		}
		m, _, _ := table.Route("secret/x")
		if err := m.KV.Write(ctx, "x", map[string]any{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		if s, err := m.KV.Read(ctx, "x"); err != nil || s.LeaseDuration != time.Hour {
			t.Fatalf("read after Tune: %v %v, want a 1h lease duration", s.LeaseDuration, err)
		}
		_, err = table.Tune(ctx, "nothing", mount.TuneRequest{DefaultTTL: &hour})
		wantKind(t, err, keel.KindNotFound)
	})
}

// TestRights: the table asks the Authorizer before each change.
func TestRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"reader": {{Path: "sys/mounts*", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		table, err := mount.Open(ctx, openStore(t), &mount.Options{Authorizer: authz, Defaults: mount.VaultDefaults()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { table.Close() })
		reader := keel.WithPrincipal(ctx, keel.Principal{ID: "r", Policies: []string{"reader"}})
		if _, err := table.List(reader); err != nil {
			t.Fatal(err)
		}
		_, err = table.Enable(reader, mount.EnableRequest{Path: "x", Type: "kv"})
		wantKind(t, err, keel.KindForbidden)
		wantKind(t, table.Disable(reader, "secret"), keel.KindForbidden)
	})
}

func TestMain(m *testing.M) { everystore.Main(m) }

// TestOpenRefusesNilStoreAndAuthorizer: a table allows everything only
// when the program says so (keel.AllowAll{}); a forgotten Authorizer is
// refused, naming the field, and nothing is written.
func TestOpenRefusesNilStoreAndAuthorizer(t *testing.T) {
	_, err := mount.Open(ctx, nil, nil)
	wantKind(t, err, keel.KindInvalid)
	var fields []string
	for _, fe := range keel.FieldErrors(err) {
		fields = append(fields, fe.Field)
	}
	if !slices.Equal(fields, []string{"Store", "Authorizer"}) {
		t.Fatalf("fields %q, want Store and Authorizer", fields)
	}
	store := everystore.Mem(t)
	_, err = mount.Open(ctx, store, &mount.Options{Defaults: mount.VaultDefaults()})
	wantKind(t, err, keel.KindInvalid)
	if dump := storagetest.Dump(t, store); len(dump) != 0 {
		t.Fatalf("a refused Open wrote %d keys", len(dump))
	}
}

// TestOneAuthorizerForTheService: the table's one Authorizer guards every
// part of the service (mounts, engines, identity groups), a group name's
// rules hold for every spelling, and MountFor shows a mount only to a
// caller that may use it, refusing alike a path under no mount.
func TestOneAuthorizerForTheService(t *testing.T) {
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"app": {
			{Path: "secret/app/*", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "identity/group/name/*", Capabilities: []keel.Capability{keel.CapRead, keel.CapCreate, keel.CapUpdate}},
			{Path: "identity/group/name/Admins", Capabilities: []keel.Capability{keel.CapDeny}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	table, err := mount.Open(ctx, everystore.Mem(t), &mount.Options{Authorizer: authz, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	app := keel.WithPrincipal(ctx, keel.Principal{ID: "app", Policies: []string{"app"}})
	root := keel.WithPrincipal(ctx, keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})

	if m, err := table.MountFor(app, "secret/app/db"); err != nil || m.Path != "secret/" {
		t.Fatalf("MountFor a path the caller may read: %+v, %v", m.Path, err)
	}
	for _, p := range []string{"secret/other", "ldap/config", "nothing/here"} {
		_, err := table.MountFor(app, p)
		wantKind(t, err, keel.KindForbidden)
	}
	if _, err := table.MountFor(root, "ldap/config"); err != nil {
		t.Fatalf("MountFor as root: %v", err)
	}
	m, _, _ := table.Route("secret/")
	wantKind(t, m.KV.Write(app, "app/db", map[string]any{"k": "v"}), keel.KindForbidden)

	for _, name := range []string{"Admins", "ADMINS", "admins"} {
		_, err := table.Groups().CreateOrUpdateByName(app, name, identity.GroupRequest{})
		wantKind(t, err, keel.KindForbidden)
	}
	if _, err := table.Groups().CreateOrUpdateByName(app, "devs", identity.GroupRequest{}); err != nil {
		t.Fatalf("a group the caller may create: %v", err)
	}
}

// TestAProgramOpensOnlyTheRoot is the program of the issue that composed
// everything by hand: it embeds kv, a leased kv mount, a library set and
// identity groups in its own transport, and writes no store prefix, gives
// one Authorizer and calls nothing at start beyond Open. A borrower with
// rights on its set's check-out and check-in only checks an account in:
// its lease is gone at once and cannot be renewed.
func TestAProgramOpensOnlyTheRoot(t *testing.T) {
	dir := ldaptest.NewDirectory()
	dir.Add("cn=admin,dc=example,dc=org", "admin-pw", "cn", "admin")
	dir.Add("cn=svc1,dc=example,dc=org", "pw1", "cn", "svc1")
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"borrower": {
			{Path: "ldap/library/team/check-out", Capabilities: []keel.Capability{keel.CapUpdate}},
			{Path: "ldap/library/team/check-in", Capabilities: []keel.Capability{keel.CapUpdate}},
			{Path: "team-a/*", Capabilities: []keel.Capability{keel.CapRead}},
			{Path: "identity/group/name/Admins", Capabilities: []keel.Capability{keel.CapDeny}},
			{Path: "identity/group/name/*", Capabilities: []keel.Capability{keel.CapRead}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	table, err := mount.Open(ctx, everystore.Mem(t), &mount.Options{Authorizer: authz, Directory: dir, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	root := keel.WithPrincipal(ctx, keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
	borrower := keel.WithPrincipal(ctx, keel.Principal{ID: "app", ClientTokenID: "t1", Policies: []string{"borrower"}})

	if _, err := table.Enable(root, mount.EnableRequest{Path: "team-a/", Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	kvm, rest, _ := table.Route("team-a/db")
	if err := kvm.KV.Write(root, rest, map[string]any{"password": "s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	if s, err := kvm.KV.Read(borrower, rest); err != nil || s.LeaseID == "" {
		t.Fatalf("leased read by the borrower: %+v, %v", s, err)
	}
	if _, err := table.Groups().CreateOrUpdateByName(root, "Admins", identity.GroupRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Admins", "admins", "ADMINS"} {
		_, err := table.Groups().GetByName(borrower, name)
		wantKind(t, err, keel.KindForbidden)
	}

	ldapm, _, _ := table.Route("ldap/")
	if err := ldapm.LDAP.PutConfig(root, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		t.Fatal(err)
	}
	if err := ldapm.LDAP.PutLibrarySet(root, "team", ldapengine.LibrarySetRequest{ServiceAccountNames: []string{"svc1"}}); err != nil {
		t.Fatal(err)
	}
	co, err := ldapm.LDAP.CheckOut(borrower, "team", ldapengine.CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if in, err := ldapm.LDAP.CheckIn(borrower, "team", ldapengine.CheckInRequest{}); err != nil || len(in) != 1 {
		t.Fatalf("check-in by the borrower: %q, %v", in, err)
	}
	_, err = table.Leases().Get(root, co.Lease.ID)
	wantKind(t, err, keel.KindNotFound)
	_, err = table.Leases().Renew(root, co.Lease.ID, time.Hour)
	wantKind(t, err, keel.KindNotFound)
}

// TestMountDataKeyedByUUID: a new mount's data is under its UUID (kv/UUID/
// or mounts/UUID/), so a mount enabled again at a path never meets the
// data of the one before; an ldap entry stored before entries said where
// their data is keeps its data under its path; an entry whose Data names
// another part of the store is not served.
func TestMountDataKeyedByUUID(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		m, _, _ := table.Route("ldap/")
		if m.Data != "mounts/"+m.UUID+"/" {
			t.Fatalf("Data %q", m.Data)
		}
		if err := m.LDAP.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "pw"}); err != nil {
			t.Fatal(err)
		}
		if _, ok := storagetest.Dump(t, store)["mounts/"+m.UUID+"/config"]; !ok {
			t.Fatal("the config of a new ldap mount is not under mounts/UUID/")
		}
		table.Close()

		// Rewrite the stored table as an older version wrote it, and
		// with one entry pointing at another mount's data.
		var entries []map[string]any
		if err := json.Unmarshal([]byte(storagetest.Dump(t, store)["sys/mounts"]), &entries); err != nil {
			t.Fatal(err)
		}
		var secretUUID string
		for _, e := range entries {
			switch e["path"] {
			case "ldap/":
				delete(e, "data")
			case "secret/":
				secretUUID = e["uuid"].(string)
			}
		}
		for _, e := range entries {
			if e["path"] == "openldap/" {
				e["data"] = "kv/" + secretUUID + "/"
			}
		}
		raw, _ := json.Marshal(entries)
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.Put("sys/mounts", raw); err != nil {
				return err
			}
			return tx.Put("ldapengine/mounts/ldap/config", []byte(`{"BindDN":"cn=old,dc=example,dc=org","BindPass":"pw"}`))
		})
		if err != nil {
			t.Fatal(err)
		}
		table = open(t, store)
		old, _, ok := table.Route("ldap/")
		if !ok {
			t.Fatal("the older ldap entry is not served")
		}
		if c, err := old.LDAP.GetConfig(ctx); err != nil || c.BindDN != "cn=old,dc=example,dc=org" {
			t.Fatalf("the older ldap mount reads %+v, %v; want its data under its path", c, err)
		}
		bad, err := table.Get(ctx, "openldap/")
		if err != nil || bad.Served() || keel.KindOf(bad.Err) != keel.KindInvalid {
			t.Fatalf("an entry whose Data is another mount's: %+v, %v", bad, err)
		}
	})
}

// TestOpenOnAViewBelowATable: a table opened on a view of a store whose
// mount table is above that view (the program opened it on the whole
// store before) is refused, naming Store, and writes nothing; a view
// beside it opens.
func TestOpenOnAViewBelowATable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		open(t, storage.Sub(store, "vault/")).Close()
		before := storagetest.Dump(t, store)
		for _, view := range []storage.Store{storage.Sub(store, "vault/team/"), storage.Sub(storage.Sub(store, "vault/"), "x/y/")} {
			_, err := mount.Open(ctx, view, &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults()})
			if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Store" {
				t.Fatalf("Open below a table: %v", err)
			}
		}
		if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
			t.Fatal("a refused Open wrote")
		}
		open(t, storage.Sub(store, "other/"))
	})
}

// TestHandBuiltComponentsOverTheRootsStore: the wiring mistakes of a
// program that builds a component by hand over the store a table lays out
// are refused when it starts, naming Store: an engine or a lease manager
// over the whole store (which lists and overwrites the table's keys),
// identity groups inside a kv mount's data. A component over a part of
// its own kind, or a part the table does not use, is built.
func TestHandBuiltComponentsOverTheRootsStore(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		m, _, _ := table.Route("secret/")
		wantStore := func(what string, err error) {
			t.Helper()
			if fe := keel.FieldErrors(err); keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != "Store" {
				t.Fatalf("%s: %v, want Invalid naming Store", what, err)
			}
		}
		_, err := kv.New(store, "secret", nil)
		wantStore("kv over the whole store", err)
		_, err = ldapengine.New(store, ldapengine.FlavorLDAP, "ldap", nil)
		wantStore("ldap over the whole store", err)
		_, err = lease.New(store, nil)
		wantStore("a lease manager over the whole store", err)
		_, err = identity.New(storage.Sub(store, "kv/"+m.UUID+"/"), nil)
		wantStore("identity inside a kv mount's data", err)
		_, err = kv.New(storage.Sub(store, "identity/"), "secret", nil)
		wantStore("kv inside identity's part", err)

		if _, err := identity.New(storage.Sub(store, "identity/"), nil); err != nil {
			t.Fatalf("identity at its own part: %v", err)
		}
		if _, err := kv.New(storage.Sub(store, "app/"), "app", nil); err != nil {
			t.Fatalf("kv over a part the table does not use: %v", err)
		}
		open(t, store) // a second table over the store claims alike
	})
}

// TestReservedPaths: Options.Reserved keeps Enable off the paths a
// program serves otherwise (at, above or below them), naming Path; a
// mount stored there before stays served.
func TestReservedPaths(t *testing.T) {
	store := everystore.Mem(t)
	table := open(t, store)
	if _, err := table.Enable(ctx, mount.EnableRequest{Path: "peering/", Type: "kv"}); err != nil {
		t.Fatal(err)
	}
	table.Close()
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Reserved: []string{"peering", "config/"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	before := storagetest.Dump(t, store)
	for _, p := range []string{"config/", "config/x/", "peering/y/"} {
		_, err := table.Enable(ctx, mount.EnableRequest{Path: p, Type: "kv"})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Path" {
			t.Errorf("Enable(%q) = %v, want Invalid naming Path", p, err)
		}
	}
	if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
		t.Fatal("a refused Enable changed the store")
	}
	if _, err := table.Enable(ctx, mount.EnableRequest{Path: "configs/", Type: "kv"}); err != nil {
		t.Fatalf("a path beside the reserved ones: %v", err)
	}
	if _, _, ok := table.Route("peering/x"); !ok {
		t.Fatal("a mount stored at a reserved path before is no longer served")
	}
}
