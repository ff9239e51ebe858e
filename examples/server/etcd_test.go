package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// TestMain gives the tests one etcd process (see etcdtest), or, in a
// child process of TestKilledLeaderIsReplaced, runs a server.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	etcdtest.Main(m)
}

// revocations records which server revoked which lease.
type revocations struct {
	mu sync.Mutex
	by map[string][]string // lease id -> servers
	n  int
}

func (r *revocations) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// mountRevoker registers the mount "e2e/" with the server's lease manager,
// with a revoker that records revocations as name's, and keeps its Issuer
// in *iss.
func (r *revocations) mountRevoker(t *testing.T, name string, iss **lease.Issuer) func(*routes, *deps) {
	return func(_ *routes, d *deps) {
		var err error
		*iss, err = d.mounts.Leases().Register(lease.Mount{Path: "e2e/", Revoker: lease.RevokerFunc(func(ctx context.Context, l lease.Lease) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.by[l.ID] = append(r.by[l.ID], name)
			r.n++
			return nil
		})})
		if err != nil {
			t.Error(err)
		}
	}
}

// TestTwoServersOnEtcd: two servers on one etcd (-etcd) share their state:
// a secret written through one is read through the other; leases expire
// once, revoked by one server; when that server stops, the other revokes.
func TestTwoServersOnEtcd(t *testing.T) {
	endpoints := strings.Join(etcdtest.Endpoints(t), ",")
	// The servers use the default prefix: this is the only test of the
	// binary on its etcd.
	r := &revocations{by: map[string][]string{}}
	var ma, mb *lease.Issuer
	a := start(t, hooks{mount: r.mountRevoker(t, "a", &ma)}, "-etcd", endpoints, "-root-token", "root-t")
	b := start(t, hooks{mount: r.mountRevoker(t, "b", &mb)}, "-etcd", endpoints, "-root-token", "root-t")

	req, err := http.NewRequest(http.MethodPut, a.url+"/v1/secret/e2e", strings.NewReader(`{"password":"p"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Secrets-Token", "root-t")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT through a: %d", resp.StatusCode)
	}
	status, body := b.get("/v1/secret/e2e", "X-Secrets-Token", "root-t")
	if status != http.StatusOK || !strings.Contains(string(body), `"password":"p"`) {
		t.Fatalf("GET through b: %d %s", status, body)
	}

	issue := func(m *lease.Issuer, n int) {
		for i := range n {
			if _, err := m.Issue(context.Background(), lease.IssueRequest{Path: fmt.Sprintf("e2e/p%d", i), TTL: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		ma.Manager().Wake()
		mb.Manager().Wake()
	}
	waitFor := func(n int) {
		t.Helper()
		keeltest.Eventually(t, "the revocations", func() error {
			if c := r.count(); c < n {
				return fmt.Errorf("%d revocations, want %d", c, n)
			}
			return nil
		})
	}
	issue(ma, 4)
	waitFor(4)
	r.mu.Lock()
	var first string
	for id, names := range r.by {
		if len(names) != 1 || first != "" && names[0] != first {
			t.Errorf("lease %s revoked by %q; all revocations: %v", id, names, r.by)
		}
		first = names[0]
	}
	r.by, r.n = map[string][]string{}, 0
	r.mu.Unlock()

	// The leader stops: the other server takes the lease expiry over.
	leaderServer, other, otherM := a, "b", mb
	if first == "b" {
		leaderServer, other, otherM = b, "a", ma
	}
	if err := leaderServer.stop(); err != nil {
		t.Fatalf("stop of the leading server: %v", err)
	}
	issue(otherM, 3)
	waitFor(3)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, names := range r.by {
		if len(names) != 1 || names[0] != other {
			t.Errorf("after the leader stopped, lease %s revoked by %q, want once by %s", id, names, other)
		}
	}
}
