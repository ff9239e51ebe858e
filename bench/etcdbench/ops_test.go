package etcdbench

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// op is one operation, ready to run many times: keel does it through keel's
// packages over etcdstore, raw sends the same etcd requests through the
// client. keelAfter and rawAfter, when not nil, run after each keel and raw
// op, outside the timer, to bring the state back (the check-in after a
// check-out).
type op struct {
	keel, raw           func(ctx context.Context) error
	keelAfter, rawAfter func(ctx context.Context) error
}

// opCase names the setup of an op. A setup works under fresh prefixes of
// the binary's etcd, deleted when tb ends: keel's under the prefix of an
// etcdstore, the yardstick's under another of the same length, which holds
// a copy of keel's keys and values (see cloneKeys) so that both read and
// write keys and values of the same sizes.
type opCase struct {
	name  string
	setup func(tb testing.TB, client *clientv3.Client) op
}

var opCases = []opCase{
	{"KVWrite", setupKVWrite},
	{"LeaseIssue", setupLeaseIssue},
	{"CheckOut", setupCheckOut},
	{"MoveWorkspaces", setupMoveWorkspaces},
}

// The prefixes of the example server's store (package mount, examples/server).
const (
	kvData      = "kv/8c0f7d1e-3b7a-4f0e-9a52-6d1b2c3e4f5a/" // a kv mount's data: "kv/" + its UUID
	leaseData   = "lease/"
	ldapData    = "ldapengine/mounts/ldap/"
	projectData = "project/"
)

// prefixes returns a prefix for keel's store and one for the yardstick,
// whose keys are deleted when tb ends.
func prefixes(tb testing.TB, client *clientv3.Client) (keelPrefix, rawPrefix string) {
	tb.Helper()
	keelPrefix, rawPrefix = etcdtest.Prefix(), etcdtest.Prefix()
	tb.Cleanup(func() {
		for _, p := range []string{keelPrefix, rawPrefix} {
			_, _ = client.Delete(context.Background(), p, clientv3.WithPrefix())
		}
	})
	return keelPrefix, rawPrefix
}

// newStore returns an etcdstore over client under prefix, closed when tb
// ends.
func newStore(tb testing.TB, client *clientv3.Client, prefix string) *etcdstore.Store {
	tb.Helper()
	s := etcdstore.New(client, &etcdstore.Options{Prefix: prefix})
	tb.Cleanup(func() { s.Close() })
	return s
}

// cloneKeys copies every key under from to the same key under to.
func cloneKeys(tb testing.TB, client *clientv3.Client, from, to string) {
	tb.Helper()
	ctx := context.Background()
	resp, err := client.Get(ctx, from, clientv3.WithPrefix())
	if err != nil {
		tb.Fatal(err)
	}
	for _, pair := range resp.Kvs {
		if _, err := client.Put(ctx, to+string(pair.Key)[len(from):], string(pair.Value)); err != nil {
			tb.Fatal(err)
		}
	}
}

// value returns the value stored at key, failing tb when there is none.
func value(tb testing.TB, client *clientv3.Client, key string) string {
	tb.Helper()
	resp, err := client.Get(context.Background(), key)
	if err != nil {
		tb.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		tb.Fatalf("no value at %q", key)
	}
	return string(resp.Kvs[0].Value)
}

// onlyKey returns the one key under prefix, failing tb unless there is
// exactly one.
func onlyKey(tb testing.TB, client *clientv3.Client, prefix string) string {
	tb.Helper()
	resp, err := client.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		tb.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		tb.Fatalf("%d keys under %q, want 1", len(resp.Kvs), prefix)
	}
	return string(resp.Kvs[0].Key)
}

// gets reads keys in order, as a transaction of etcdstore does: the first
// read is linearizable and fixes the revision, every later one asks for
// it. It returns the mod revision of each key (0: missing) and its value.
func gets(ctx context.Context, client *clientv3.Client, keys ...string) (revs []int64, values [][]byte, err error) {
	revs, values = make([]int64, len(keys)), make([][]byte, len(keys))
	var rev int64
	for i, k := range keys {
		var opts []clientv3.OpOption
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := client.Get(ctx, k, opts...)
		if err != nil {
			return nil, nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		if len(resp.Kvs) > 0 {
			revs[i], values[i] = resp.Kvs[0].ModRevision, resp.Kvs[0].Value
		}
	}
	return revs, values, nil
}

// unchanged returns the comparisons of a commit that applies only when
// none of keys changed since it was read at its mod revision revs[i].
func unchanged(keys []string, revs []int64) []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, len(keys))
	for i, k := range keys {
		cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", revs[i])
	}
	return cmps
}

// commit sends a Txn and fails unless its comparisons held.
func commit(ctx context.Context, client *clientv3.Client, cmps []clientv3.Cmp, ops ...clientv3.Op) error {
	resp, err := client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("yardstick: a comparison failed")
	}
	return nil
}

// leaseKeys returns the keys of a new lease of path in a lease store under
// prefix, as package lease names them: its record ("id/" + the lease id, the
// path and 24 random characters) and its expiry-index entry ("due/", 16 hex
// digits of its expiry, "/", the id).
func leaseKeys(prefix, path string, expiry time.Time) (idKey, dueKey string) {
	const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var id strings.Builder
	id.WriteString(path)
	id.WriteByte('/')
	for range 24 {
		id.WriteByte(base62[rand.IntN(len(base62))])
	}
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], uint64(expiry.UnixNano()))
	return prefix + "id/" + id.String(), prefix + "due/" + hex.EncodeToString(t[:]) + "/" + id.String()
}

// benchSecret is the secret of KVWrite: the one of kv/bench_test.go.
var benchSecret = map[string]any{
	"username": "app-user",
	"password": "correct-horse-battery-staple",
	"url":      "postgres://db.internal:5432/app",
	"ttl":      "1h",
}

// setupKVWrite: kv.Engine.Write overwriting a secret, which reads the key
// (to ask for create or update) and puts the JSON of the secret. The
// yardstick Gets the key and sends one Txn comparing its mod revision and
// putting the same JSON.
func setupKVWrite(tb testing.TB, client *clientv3.Client) op {
	tb.Helper()
	ctx := context.Background()
	keelPrefix, rawPrefix := prefixes(tb, client)
	e, err := kv.New(storage.Sub(newStore(tb, client, keelPrefix), kvData), "secret", nil)
	if err != nil {
		tb.Fatal(err)
	}
	const path = "app/db"
	if err := e.Write(ctx, path, benchSecret); err != nil {
		tb.Fatal(err)
	}
	cloneKeys(tb, client, keelPrefix, rawPrefix)
	key := rawPrefix + kvData + path
	secret := value(tb, client, key) // the JSON kv wrote
	return op{
		keel: func(ctx context.Context) error { return e.Write(ctx, path, benchSecret) },
		raw: func(ctx context.Context) error {
			revs, _, err := gets(ctx, client, key)
			if err != nil {
				return err
			}
			return commit(ctx, client, unchanged([]string{key}, revs), clientv3.OpPut(key, secret))
		},
	}
}

// leaseDataBytes is the engine data of the issued leases, the size of a
// DN.
var leaseDataBytes = []byte("cn=v-app-0123456789,ou=users,dc=example,dc=org")

// setupLeaseIssue: lease.Issuer.Issue, which reads the lease store's quota
// record (absent here: no quota) and writes the lease record and its
// expiry-index entry. The yardstick Gets the quota record and sends one Txn
// comparing it and putting two such keys (a fresh lease id each time), with
// the record keel wrote.
func setupLeaseIssue(tb testing.TB, client *clientv3.Client) op {
	tb.Helper()
	ctx := context.Background()
	keelPrefix, rawPrefix := prefixes(tb, client)
	m, err := lease.New(storage.Sub(newStore(tb, client, keelPrefix), leaseData), nil)
	if err != nil {
		tb.Fatal(err)
	}
	iss, err := m.Register(lease.Mount{Path: "ldap/"})
	if err != nil {
		tb.Fatal(err)
	}
	req := lease.IssueRequest{Path: "ldap/creds/app", TTL: time.Hour, Renewable: true, Data: leaseDataBytes}
	if _, err := iss.Issue(ctx, req); err != nil {
		tb.Fatal(err)
	}
	record := value(tb, client, onlyKey(tb, client, keelPrefix+leaseData+"id/"))
	prefix := rawPrefix + leaseData
	return op{
		keel: func(ctx context.Context) error {
			_, err := iss.Issue(ctx, req)
			return err
		},
		raw: func(ctx context.Context) error {
			keys := []string{prefix + "quotas"}
			revs, _, err := gets(ctx, client, keys...)
			if err != nil {
				return err
			}
			idKey, dueKey := leaseKeys(prefix, req.Path, time.Now().Add(req.TTL))
			return commit(ctx, client, unchanged(keys, revs), clientv3.OpPut(dueKey, ""), clientv3.OpPut(idKey, record))
		},
	}
}

// The library set of CheckOut: one account, in a directory that also holds
// the bind account.
const (
	bindDN   = "cn=keel,dc=example,dc=org"
	usersDN  = "ou=users,dc=example,dc=org"
	libSet   = "team-a"
	libAcct  = "svc-app"
	libToken = "token-accessor-0123456789"
)

// setupCheckOut: ldapengine.Engine.CheckOut of the one account of a library
// set, which reads the set, the engine's restore mark (absent) and the
// account and, in the same transaction,
// writes the account (now lent) and the lease of the check-out (its record
// and expiry-index entry), having read the lease store's quota record. The check-in after each check-out is not timed.
// The yardstick Gets the four keys and sends one Txn comparing them and
// putting the account keel wrote and a fresh lease's two keys; it deletes
// the lease's keys after, not timed.
func setupCheckOut(tb testing.TB, client *clientv3.Client) op {
	tb.Helper()
	keelPrefix, rawPrefix := prefixes(tb, client)
	root := newStore(tb, client, keelPrefix)
	m, err := lease.New(storage.Sub(root, leaseData), nil)
	if err != nil {
		tb.Fatal(err)
	}
	dir := ldaptest.NewDirectory()
	dir.Add(bindDN, "bind-pw", "cn", "keel")
	dir.Add("uid="+libAcct+","+usersDN, "initial-pw", "uid", libAcct)
	view := storage.Sub(root, ldapData)
	iss, err := m.Register(lease.Mount{Path: "ldap/", Store: view})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := ldapengine.New(view, ldapengine.FlavorLDAP, "ldap", &ldapengine.Options{Directory: dir, Leases: iss})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Stop)
	ctx := keel.WithPrincipal(context.Background(), keel.Principal{ID: libToken, ClientTokenID: libToken, EntityID: "entity-0123456789"})
	cfg := ldapengine.Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1", UserDN: usersDN, UserAttr: "uid"}
	if err := e.PutConfig(ctx, cfg); err != nil {
		tb.Fatal(err)
	}
	if err := e.PutLibrarySet(ctx, libSet, ldapengine.LibrarySetRequest{ServiceAccountNames: []string{libAcct}}); err != nil {
		tb.Fatal(err)
	}
	checkOut := func(ctx context.Context) error {
		co, err := e.CheckOut(ctx, libSet, ldapengine.CheckOutRequest{})
		if err == nil && co.ServiceAccountName != libAcct {
			err = fmt.Errorf("checked out %q, want %q", co.ServiceAccountName, libAcct)
		}
		return err
	}
	checkIn := func(ctx context.Context) error {
		in, err := e.CheckIn(ctx, libSet, ldapengine.CheckInRequest{ServiceAccountNames: []string{libAcct}})
		if err == nil && len(in) != 1 {
			err = fmt.Errorf("checked in %q, want [%s]", in, libAcct)
		}
		return err
	}
	// Clone keel's keys with the account lent, to put the same bytes.
	if err := checkOut(ctx); err != nil {
		tb.Fatal(err)
	}
	cloneKeys(tb, client, keelPrefix, rawPrefix)
	if err := checkIn(ctx); err != nil {
		tb.Fatal(err)
	}
	setKey := rawPrefix + ldapData + "library/set/" + libSet
	restoredKey := rawPrefix + ldapData + "restored" // absent: the store is no restored copy
	acctKey := rawPrefix + ldapData + "library/acct/" + libSet + "/" + libAcct
	lent := value(tb, client, acctKey)
	record := value(tb, client, onlyKey(tb, client, rawPrefix+leaseData+"id/"))
	leasePath := "ldap/library/" + libSet + "/check-out"
	var idKey, dueKey string
	return op{
		keel:      func(context.Context) error { return checkOut(ctx) },
		keelAfter: func(context.Context) error { return checkIn(ctx) },
		raw: func(ctx context.Context) error {
			keys := []string{setKey, restoredKey, acctKey, rawPrefix + leaseData + "quotas"}
			revs, _, err := gets(ctx, client, keys...)
			if err != nil {
				return err
			}
			idKey, dueKey = leaseKeys(rawPrefix+leaseData, leasePath, time.Now().Add(24*time.Hour))
			return commit(ctx, client, unchanged(keys, revs),
				clientv3.OpPut(acctKey, lent), clientv3.OpPut(dueKey, ""), clientv3.OpPut(idKey, record))
		},
		rawAfter: func(ctx context.Context) error {
			return commit(ctx, client, nil, clientv3.OpDelete(idKey), clientv3.OpDelete(dueKey))
		},
	}
}

// moveWorkspaces is how many workspaces MoveWorkspaces moves at once.
const moveWorkspaces = 10

// setupMoveWorkspaces: project.Catalog.MoveWorkspaces of 10 workspaces from
// one project to the other (and back at the next op), which reads the
// destination project and its organization, each workspace and the source
// project, and writes, per workspace, its record and its entry in the
// projects' workspace index (one delete, one put), then both projects'
// records (their workspace counts). It reads the destination project a
// second time, before writing it: 14 Gets of 13 keys. The yardstick Gets
// the 13 keys and sends one Txn with the same comparisons, puts and
// deletes, putting the values it read (the same sizes).
func setupMoveWorkspaces(tb testing.TB, client *clientv3.Client) op {
	tb.Helper()
	ctx := context.Background()
	keelPrefix, rawPrefix := prefixes(tb, client)
	c, err := project.New(storage.Sub(newStore(tb, client, keelPrefix), projectData), nil)
	if err != nil {
		tb.Fatal(err)
	}
	org, err := c.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("admin@acme.example")})
	if err != nil {
		tb.Fatal(err)
	}
	var pids [2]string
	for i := range pids {
		name := fmt.Sprintf("project-%d", i)
		p, err := c.Create(ctx, org.Name, project.ProjectRequest{Name: &name})
		if err != nil {
			tb.Fatal(err)
		}
		pids[i] = p.ID
	}
	ids := make([]string, moveWorkspaces)
	for i := range ids {
		w, err := c.CreateWorkspace(ctx, org.Name, project.WorkspaceRequest{Name: new(fmt.Sprintf("workspace-%03d", i)), ProjectID: &pids[0]})
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = w.ID
	}
	slices.Sort(ids) // the order in which MoveWorkspaces reads them
	cloneKeys(tb, client, keelPrefix, rawPrefix)
	keelTo, rawTo := 1, 1 // the index in pids of the next move's destination
	p := rawPrefix + projectData
	ix := func(prj, ws string) string { return p + "ix/" + org.Name + "/prjws/" + prj + "/" + ws }
	return op{
		keel: func(ctx context.Context) error {
			err := c.MoveWorkspaces(ctx, pids[keelTo], ids)
			keelTo ^= 1
			return err
		},
		raw: func(ctx context.Context) error {
			dest, src := pids[rawTo], pids[rawTo^1]
			rawTo ^= 1
			keys := []string{p + "prj/" + dest, p + "org/" + org.Name}
			for _, id := range ids {
				keys = append(keys, p+"ws/"+id)
			}
			keys = append(keys, p+"prj/"+src)
			revs, values, err := gets(ctx, client, keys...)
			if err != nil {
				return err
			}
			ops := make([]clientv3.Op, 0, 3*len(ids)+2)
			for i, id := range ids {
				ops = append(ops, clientv3.OpDelete(ix(src, id)), clientv3.OpPut(ix(dest, id), ""),
					clientv3.OpPut(keys[2+i], string(values[2+i])))
			}
			ops = append(ops, clientv3.OpPut(keys[0], string(values[0])), clientv3.OpPut(keys[len(keys)-1], string(values[len(keys)-1])))
			return commit(ctx, client, unchanged(keys, revs), ops...)
		},
	}
}
