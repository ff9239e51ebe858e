package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// TestMountsFollowedAcrossServers runs two server processes on one etcd.
// A leased kv mount enabled through the server that does not lead the
// lease worker is served by the leader, and the leader revokes the leases
// of secrets read through either server once their ttl (2s) has passed.
// Disabled through the follower, the mount answers 404 through the leader
// at once, and etcd keeps no key of it. The bounds are far beyond what the
// watch needs (milliseconds); the times are logged.
func TestMountsFollowedAcrossServers(t *testing.T) {
	endpoints := strings.Join(etcdtest.Endpoints(t), ",")
	cli := etcdtest.Client(t)
	prefix := etcdtest.Prefix()
	args := []string{"-addr", "127.0.0.1:0", "-etcd", endpoints, "-etcd-prefix", prefix, "-leader-ttl", "2s", "-root-token", "root-t"}
	child := []string{childEnv + "=1"}
	servers := []*process{startProcess(t, child, os.Args[0], args...), startProcess(t, child, os.Args[0], args...)}
	pid := workerLeader(t, cli, prefix, "lease")
	leader, follower := servers[0], servers[1]
	if leader.cmd.Process.Pid != pid {
		leader, follower = follower, leader
	}

	// Enabled through the follower, served by the leader.
	if status, body, _ := follower.do("POST", "/v1/sys/mounts/late", `{"type":"kv","options":{"leased_passthrough":"true"}}`); status != http.StatusNoContent {
		t.Fatalf("enable through the follower: %d %s", status, body)
	}
	d := keeltest.Eventually(t, "a write through the leader after the enable", func() error {
		status, body, _ := leader.do("PUT", "/v1/late/x", `{"v":"1","ttl":"2s"}`)
		switch status {
		case http.StatusNoContent:
			return nil
		case http.StatusNotFound:
			return fmt.Errorf("%d %s", status, body)
		}
		t.Fatalf("write through the leader after the enable: %d %s", status, body)
		return nil
	})
	t.Logf("the leader served the mount enabled through the follower %v after the enable", d)

	// Leases of reads through each server, revoked by the leader.
	read := func(p *process) (string, time.Time) {
		status, body, _ := p.do("GET", "/v1/late/x", "")
		var out struct {
			LeaseID       string `json:"lease_id"`
			LeaseDuration int    `json:"lease_duration"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.LeaseID == "" || out.LeaseDuration != 2 {
			t.Fatalf("leased read: %d %s", status, body)
		}
		return out.LeaseID, time.Now().Add(2 * time.Second)
	}
	ids := map[string]time.Time{}
	for _, p := range []*process{follower, leader} {
		id, expiry := read(p)
		ids[id] = expiry
	}
	listed := func() string {
		_, body, _ := leader.do("LIST", "/v1/sys/leases/lookup/late/x/", "")
		return body
	}
	for id, expiry := range ids {
		key := id[strings.LastIndexByte(id, '/')+1:]
		keeltest.Until(t, "lease "+id+" gone after its expiry", func() bool { return !strings.Contains(listed(), key) })
		t.Logf("lease %s gone %v after its expiry", id, time.Since(expiry))
	}
	if log := leader.log() + follower.log(); strings.Contains(log, "revocation failed") || strings.Contains(log, "irrevocable") {
		t.Fatalf("a revocation was counted as failed:\n%s", log)
	}

	// Disabled through the follower: 404 through the leader, no key left.
	status, body, _ := leader.do("GET", "/v1/sys/mounts", "")
	var mounts struct {
		Data map[string]struct{ UUID string } `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &mounts) != nil || mounts.Data["late/"].UUID == "" {
		t.Fatalf("mounts: %d %s", status, body)
	}
	uuid := mounts.Data["late/"].UUID
	if status, body, _ := follower.do("DELETE", "/v1/sys/mounts/late", ""); status != http.StatusNoContent {
		t.Fatalf("disable through the follower: %d %s", status, body)
	}
	d = keeltest.Eventually(t, "a 404 through the leader after the disable", func() error {
		status, body, _ := leader.do("PUT", "/v1/late/x", `{"v":"2"}`)
		switch status {
		case http.StatusNotFound:
			return nil
		case http.StatusNoContent:
			return fmt.Errorf("%d %s", status, body)
		}
		t.Fatalf("write through the leader after the disable: %d %s", status, body)
		return nil
	})
	t.Logf("the leader answered 404 %v after the disable through the follower", d)
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.Contains(k, uuid) || strings.HasPrefix(k, prefix+"lease/id/late/") {
			t.Errorf("key of the disabled mount left in etcd: %s", k)
		}
	}
}

// TestLeaseQuotaAcrossServers runs two server processes on one etcd with a
// lease-count quota of 10 on a leased kv mount, and reads through both at
// once with vault/api in its default configuration, more than the quota
// allows: exactly 10 reads get a lease, the others answer 429 naming the
// quota, and the quota's counter reads 10. Once one lease is revoked
// through one server, a read through the other gets a lease again.
func TestLeaseQuotaAcrossServers(t *testing.T) {
	endpoints := strings.Join(etcdtest.Endpoints(t), ",")
	args := []string{"-addr", "127.0.0.1:0", "-etcd", endpoints, "-etcd-prefix", etcdtest.Prefix(), "-root-token", "root-t"}
	child := []string{childEnv + "=1"}
	a, b := startProcess(t, child, os.Args[0], args...), startProcess(t, child, os.Args[0], args...)
	client := func(p *process) *api.Client {
		cfg := api.DefaultConfig()
		cfg.Address = p.url
		c, err := api.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.SetToken("root-t")
		return c
	}
	ca, cb := client(a), client(b)
	if err := ca.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Logical().Write("sys/quotas/lease-count/ten", map[string]any{"path": "leased/", "max_leases": 10}); err != nil {
		t.Fatal(err)
	}
	keeltest.Eventually(t, "a write through the other server", func() error {
		_, err := cb.Logical().Write("leased/db", map[string]any{"password": "p", "ttl": "1h"})
		return err
	})

	// 2 servers × 4 clients × 4 reads: 32 tries for 10 leases.
	type result struct {
		lease string
		err   error
	}
	results := make(chan result, 32)
	var wg sync.WaitGroup
	for _, c := range []*api.Client{ca, cb} {
		for range 4 {
			wg.Go(func() {
				for range 4 {
					s, err := c.Logical().Read("leased/db")
					if err == nil && s != nil {
						results <- result{lease: s.LeaseID}
					} else {
						results <- result{err: err}
					}
				}
			})
		}
	}
	wg.Wait()
	close(results)
	var leases []string
	for r := range results {
		var re *api.ResponseError
		switch {
		case r.err == nil && r.lease != "":
			leases = append(leases, r.lease)
		case errors.As(r.err, &re) && re.StatusCode == http.StatusTooManyRequests:
			if !strings.Contains(re.Error(), `quota "ten"`) {
				t.Errorf("429 not naming the quota: %v", re)
			}
		default:
			t.Fatalf("read: %q, %v", r.lease, r.err)
		}
	}
	if len(leases) != 10 {
		t.Fatalf("%d leases issued through two servers under a quota of 10", len(leases))
	}
	q, err := cb.Logical().Read("sys/quotas/lease-count/ten")
	if err != nil || q == nil || q.Data["counter"] != json.Number("10") {
		t.Fatalf("quota read: %+v, %v; want counter 10", q, err)
	}

	if err := ca.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: leases[0], Sync: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := cb.Logical().Read("leased/db"); err != nil || s == nil || !strings.HasPrefix(s.LeaseID, "leased/db/") {
		t.Fatalf("a read after a revocation: %+v, %v", s, err)
	}
}
