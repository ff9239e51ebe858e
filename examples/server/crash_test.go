package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// childEnv, set in the environment of this test binary, makes it run a
// server (with recordRevocations) on its arguments instead of the tests:
// the tests below start whole server processes that way, and kill them.
const childEnv = "KEEL_TEST_SERVER_CHILD"

// runChild serves until SIGTERM or an interrupt and returns the exit
// code.
func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, os.Args[1:], os.Stderr, hooks{mount: recordRevocations}); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		return 1
	}
	return 0
}

// revocationsPrefix is where recordRevocations records, in the server's
// store, each call of its revoker: revocationsPrefix + lease id + "/" +
// pid-call.
const revocationsPrefix = "e2e-revocations/"

// recordRevocations registers the mount "e2e/" with a revoker that records
// each of its calls in the server's store, so that a test sees every call
// of every process, and serves POST /e2e/issue?ttl=D, which issues a lease
// of the mount and answers its id.
func recordRevocations(mux *routes, d *deps) {
	pid := os.Getpid()
	var calls atomic.Int64
	iss, err := d.mounts.Leases().Register(lease.Mount{Path: "e2e/", Revoker: lease.RevokerFunc(func(ctx context.Context, l lease.Lease) error {
		key := fmt.Sprintf("%s%s/%d-%d", revocationsPrefix, l.ID, pid, calls.Add(1))
		return d.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put(key, nil) })
	})})
	if err != nil {
		panic(err)
	}
	mux.HandleFunc("POST /e2e/issue", func(w http.ResponseWriter, r *http.Request) {
		ttl, err := time.ParseDuration(r.URL.Query().Get("ttl"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l, err := iss.Issue(r.Context(), lease.IssueRequest{Path: "e2e/x", TTL: ttl})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, l.ID)
	})
}

// workerLeader returns the pid of the server that leads the worker name
// ("lease", "peering") of the deployment under prefix, waiting until one
// does.
func workerLeader(t *testing.T, cli *clientv3.Client, prefix, name string) int {
	t.Helper()
	key := "keel-leader/" + prefix + name + "/"
	var pid int
	keeltest.Eventually(t, "a server leads the "+name+" worker", func() error {
		resp, err := cli.Get(context.Background(), key, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			return fmt.Errorf("no key under %s", key)
		}
		id := string(resp.Kvs[0].Value) // host/pid
		if pid, err = strconv.Atoi(id[strings.LastIndexByte(id, '/')+1:]); err != nil {
			t.Fatalf("leader id %q", id)
		}
		return nil
	})
	return pid
}

var pprofListening = regexp.MustCompile(`pprof listening"? addr=(\S+)`)

// waitBlocking waits until a goroutine of p, started with -pprof, waits in
// a blocking query (peering's block, in its goroutine dump): the barrier
// for a read that must be waiting when the change it waits for is made.
func (p *process) waitBlocking(t *testing.T) {
	t.Helper()
	keeltest.Eventually(t, "a blocking query waits in the server", func() error {
		m := pprofListening.FindStringSubmatch(p.log())
		if m == nil {
			return errors.New("no pprof address in the log yet")
		}
		resp, err := http.Get("http://" + m[1] + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("peering.(*Service).block(")) {
			return errors.New("no goroutine in peering's block")
		}
		return nil
	})
}

// TestKilledLeaderIsReplaced runs two server processes on one etcd. A
// blocking read through one returns within a second of a change made
// through the other. Then the server that leads the lease worker is
// killed (SIGKILL) right after it issued a lease of 5 s: the other server
// revokes it, exactly once (each call of the revoker is recorded in etcd),
// within the TTL, the session TTL (-leader-ttl 2s) and 5 s, and leads the
// peering worker. The real-time bounds get a slack derived from a
// baseline of the run: the slowest of a few reads through a server.
func TestKilledLeaderIsReplaced(t *testing.T) {
	endpoints := strings.Join(etcdtest.Endpoints(t), ",")
	cli := etcdtest.Client(t)
	prefix := etcdtest.Prefix()
	args := []string{"-addr", "127.0.0.1:0", "-etcd", endpoints, "-etcd-prefix", prefix, "-leader-ttl", "2s", "-root-token", "root-t", "-pprof", "127.0.0.1:0"}
	child := []string{childEnv + "=1"}
	servers := []*process{startProcess(t, child, os.Args[0], args...), startProcess(t, child, os.Args[0], args...)}

	// A blocking read through servers[1] of a change through servers[0].
	if status, body, _ := servers[0].do("POST", "/v1/peering/token", `{"PeerName":"b"}`); status != http.StatusOK {
		t.Fatalf("token: %d %s", status, body)
	}
	var baseline time.Duration
	var status int
	var body, index string
	for range 3 {
		start := time.Now()
		var h http.Header
		status, body, h = servers[1].do("GET", "/v1/peering/b", "")
		baseline = max(baseline, time.Since(start))
		index = h.Get("X-Consul-Index")
		if status != http.StatusOK || index == "" {
			t.Fatalf("read through the other server: %d %s, index %q", status, body, index)
		}
	}
	slack := time.Second + 20*baseline
	t.Logf("a read through a server takes up to %v: a slack of %v", baseline.Round(time.Millisecond), slack.Round(time.Millisecond))
	type answer struct {
		status int
		index  string
		at     time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		status, _, h := servers[1].do("GET", "/v1/peering/b?index="+index+"&wait=75s", "")
		answered <- answer{status, h.Get("X-Consul-Index"), time.Now()}
	}()
	servers[1].waitBlocking(t)
	if status, body, _ := servers[0].do("DELETE", "/v1/peering/b", ""); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, body)
	}
	changed := time.Now()
	select {
	case a := <-answered:
		// The deletion marks the peering, then a worker removes it: the
		// read may see either (a loaded machine lets the removal in first).
		if a.status != http.StatusOK && a.status != http.StatusNotFound || a.index == index {
			t.Fatalf("blocking read answered %d with index %s, want 200 or 404 above %s", a.status, a.index, index)
		}
		d := a.at.Sub(changed)
		t.Logf("blocking read answered %v after the change through the other server", d)
		if limit := time.Second + slack; d > limit {
			t.Fatalf("the blocking read answered %v after the change through the other server, want within %v (1s and the slack)", d, limit)
		}
	case <-time.After(wait):
		t.Fatalf("the blocking read did not answer within %v of the change through the other server", wait)
	}

	// The leader of the lease worker issues a 5 s lease and is killed.
	pid := workerLeader(t, cli, prefix, "lease")
	killed, survivor := servers[0], servers[1]
	if survivor.cmd.Process.Pid == pid {
		killed, survivor = survivor, killed
	} else if killed.cmd.Process.Pid != pid {
		t.Fatalf("the lease leader %d is none of the servers", pid)
	}
	status, id, _ := killed.do("POST", "/e2e/issue?ttl=5s", "")
	issued := time.Now()
	if status != http.StatusOK {
		t.Fatalf("issue: %d %s", status, id)
	}
	killed.kill()
	recorded := func() []string {
		resp, err := cli.Get(context.Background(), prefix+revocationsPrefix+id+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		for _, kv := range resp.Kvs {
			calls = append(calls, string(kv.Key[len(prefix+revocationsPrefix+id+"/"):]))
		}
		return calls
	}
	keeltest.Until(t, "lease "+id+" revoked", func() bool { return len(recorded()) > 0 })
	revokedAfter := time.Since(issued)
	if bound := 5*time.Second + 2*time.Second + 5*time.Second + slack; revokedAfter > bound {
		t.Fatalf("lease %s revoked %v after its issue, want within %v (TTL + session TTL + 5s + the slack)", id, revokedAfter, bound)
	}
	// Nothing more comes: the lease is gone (the barrier: no revocation
	// starts for a lease no longer stored), and its revoker was called
	// once, by the survivor.
	keeltest.Eventually(t, "the revoked lease gone", func() error {
		if status, body, _ := survivor.do("PUT", "/v1/sys/leases/lookup", `{"lease_id":`+strconv.Quote(id)+`}`); status != http.StatusBadRequest {
			return fmt.Errorf("lookup: %d %s", status, body)
		}
		return nil
	})
	calls := recorded()
	if len(calls) != 1 || !strings.HasPrefix(calls[0], strconv.Itoa(survivor.cmd.Process.Pid)+"-") {
		t.Fatalf("revoker calls %q, want one by the survivor %d", calls, survivor.cmd.Process.Pid)
	}
	status, body, _ = survivor.do("PUT", "/v1/sys/leases/lookup", `{"lease_id":`+strconv.Quote(id)+`}`)
	var errs struct{ Errors []string }
	if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &errs) != nil {
		t.Fatalf("lookup of the revoked lease: %d %s, want 400 (invalid lease)", status, body)
	}
	t.Logf("lease revoked by the survivor %v after its issue", revokedAfter)
	// The survivor runs the other workers too (peering's heartbeats).
	if got := workerLeader(t, cli, prefix, "peering"); got != survivor.cmd.Process.Pid {
		t.Fatalf("the peering worker is led by %d, want the survivor %d", got, survivor.cmd.Process.Pid)
	}
}
