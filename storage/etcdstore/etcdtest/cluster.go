package etcdtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The timing of a Cluster's members: short, so that a killed leader is
// replaced within about a second, and far above what loopback needs.
const (
	// HeartbeatInterval is the --heartbeat-interval of a member.
	HeartbeatInterval = 50 * time.Millisecond
	// ElectionTimeout is the --election-timeout of a member: how long a
	// follower waits for its leader before it starts an election, and a
	// leader without a quorum before it steps down.
	ElectionTimeout = 500 * time.Millisecond
)

// Cluster is an etcd cluster of separate etcd processes (the etcd binary,
// such as Debian's etcd-server) on loopback, for tests that kill, pause and
// restart members. Create one with StartCluster; it is stopped when its
// test ends.
type Cluster struct {
	members []*Member
	client  *clientv3.Client // for Status calls to one endpoint each
}

// Member is one etcd process of a Cluster. Its ports and data directory stay
// the same across Kill and Restart.
type Member struct {
	// Name is the member's --name: "m0", "m1", ...
	Name string
	// ClientURL is where clients reach the member.
	ClientURL string
	// PeerURL is where the other members reach it.
	PeerURL string

	bin  string
	args []string
	log  string // the file of the member's output, across restarts

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil before the first start
	done   chan struct{} // closed when cmd has exited
	killed bool          // by Kill, since the last start
}

// EtcdBinary returns the path of the etcd binary: $KEEL_ETCD_BINARY when
// set, or "etcd" looked up in $PATH.
func EtcdBinary() (string, error) {
	if bin := os.Getenv("KEEL_ETCD_BINARY"); bin != "" {
		return bin, nil
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd not installed (%w): apt-get install etcd-server to run this test, or set KEEL_ETCD_BINARY", err)
	}
	return bin, nil
}

// StartCluster starts a cluster of size etcd processes on free loopback
// ports, each with its data in a directory of t.TempDir(), and waits until
// they have elected a leader. It skips t when there is no etcd binary (see
// EtcdBinary) or the platform cannot stop the processes with the test
// binary (see platformErr), and fails it when the cluster does not start.
// Every process is killed when t ends; on Linux the kernel also kills them
// when the test binary dies (Pdeathsig).
func StartCluster(t testing.TB, size int) *Cluster {
	t.Helper()
	if platformErr != nil {
		t.Skipf("etcdtest: no etcd cluster: %v", platformErr)
	}
	bin, err := EtcdBinary()
	if err != nil {
		t.Skipf("%v", err)
	}
	noFsync := supportsNoFsync(bin)
	// A port chosen free may be taken by another process before etcd
	// binds it: try again with other ports.
	for attempt := 1; ; attempt++ {
		c, err := startCluster(t, bin, size, noFsync, filepath.Join(t.TempDir(), "cluster"))
		if err == nil {
			return c
		}
		if attempt == 3 {
			t.Fatalf("etcdtest: start a cluster of %d: %v", size, err)
		}
		t.Logf("etcdtest: start a cluster of %d: %v; trying other ports", size, err)
	}
}

func startCluster(t testing.TB, bin string, size int, noFsync bool, dir string) (_ *Cluster, err error) {
	ports, err := freePorts(2 * size)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	var initial []string
	for i := range size {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			bin:       bin,
		}
		c.members = append(c.members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	var token [8]byte
	rand.Read(token[:])
	for _, m := range c.members {
		mdir := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(mdir, 0o700); err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		m.log = filepath.Join(mdir, "etcd.log")
		m.args = []string{
			"--name", m.Name,
			"--data-dir", filepath.Join(mdir, "data"),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "keel-test-" + hex.EncodeToString(token[:]),
			"--heartbeat-interval", fmt.Sprint(HeartbeatInterval.Milliseconds()),
			"--election-timeout", fmt.Sprint(ElectionTimeout.Milliseconds()),
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
		}
		if noFsync {
			m.args = append(m.args, "--unsafe-no-fsync")
		}
	}
	t.Cleanup(func() {
		if c.client != nil {
			c.client.Close()
		}
		for _, m := range c.members {
			m.Kill()
		}
		if t.Failed() {
			for _, m := range c.members {
				t.Logf("etcdtest: last lines of %s's log:\n%s", m.Name, m.logTail(20))
			}
		}
	})
	defer func() {
		if err != nil {
			for _, m := range c.members {
				m.Kill()
			}
		}
	}()
	for _, m := range c.members {
		if err := m.start(); err != nil {
			return nil, err
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client of the cluster: %w", err)
	}
	c.client = client
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
	defer cancel()
	if _, err := c.WaitLeader(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// supportsNoFsync reports whether bin knows --unsafe-no-fsync (etcd 3.5 and
// later; Debian bookworm's 3.4 does not).
func supportsNoFsync(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--unsafe-no-fsync"))
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Members returns the members, in the order of their names.
func (c *Cluster) Members() []*Member { return c.members }

// Endpoints returns the client URLs of every member, running or not.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Leader returns the member that the running members that answer name as
// their raft leader, or an error when none answers or they name none or
// different ones.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	byID := map[uint64]*Member{}
	var leader uint64
	var errs []error
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.client.Status(sctx, m.ClientURL)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			continue
		}
		byID[st.Header.MemberId] = m
		switch {
		case st.Leader == 0:
			errs = append(errs, fmt.Errorf("%s has no leader", m.Name))
		case leader == 0:
			leader = st.Leader
		case leader != st.Leader:
			errs = append(errs, fmt.Errorf("%s names leader %x, another member %x", m.Name, st.Leader, leader))
		}
	}
	if m := byID[leader]; m != nil && len(errs) == 0 {
		return m, nil
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Errorf("leader %x is not a running member", leader))
	}
	return nil, fmt.Errorf("etcdtest: no leader: %w", errors.Join(errs...))
}

// WaitLeader polls Leader until it answers or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (*Member, error) {
	for {
		m, err := c.Leader(ctx)
		if err == nil {
			return m, nil
		}
		for _, m := range c.members {
			if m.crashed() {
				return nil, fmt.Errorf("etcdtest: %s exited: %s", m.Name, m.logTail(5))
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waited until %w)", err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// start starts the member's process.
func (m *Member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && !isClosed(m.done) {
		return fmt.Errorf("etcdtest: %s is running", m.Name)
	}
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	fmt.Fprintf(logf, "---- etcdtest: start %s at %s\n", m.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	// etcd reads every ETCD_* variable as a flag.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdtest: start %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	m.cmd, m.done, m.killed = cmd, done, false
	return nil
}

// Running reports whether the member's process was started and has not
// exited (a stopped process is running).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && !isClosed(m.done)
}

// crashed reports whether the member's process was started and has exited
// without Kill.
func (m *Member) crashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && isClosed(m.done) && !m.killed
}

// Kill kills the member's process with SIGKILL, as a crash would, and waits
// until it has exited. Killing a member that does not run does nothing.
func (m *Member) Kill() error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	if cmd != nil {
		m.killed = true
	}
	m.mu.Unlock()
	if cmd == nil || isClosed(done) {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdtest: kill %s: %w", m.Name, err)
	}
	<-done
	return nil
}

// Stop stops the member's process with SIGSTOP: it holds its connections
// and answers nothing, like a hung machine, until Continue.
func (m *Member) Stop() error { return m.signal(stopSignal, "stop") }

// Continue resumes a member stopped by Stop (SIGCONT).
func (m *Member) Continue() error { return m.signal(contSignal, "continue") }

func (m *Member) signal(sig os.Signal, what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || isClosed(m.done) {
		return fmt.Errorf("etcdtest: %s %s: not running", what, m.Name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("etcdtest: %s %s: %w", what, m.Name, err)
	}
	return nil
}

// Restart starts a killed member again, on its ports and with its data, and
// waits until it accepts connections on its client port (not until it has
// caught up with the cluster, which needs a quorum: use Cluster.WaitLeader).
func (m *Member) Restart(ctx context.Context) error {
	if err := m.start(); err != nil {
		return err
	}
	addr := strings.TrimPrefix(m.ClientURL, "http://")
	for {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if m.crashed() {
			return fmt.Errorf("etcdtest: restart %s: it exited: %s", m.Name, m.logTail(5))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcdtest: restart %s: not listening on %s: %w", m.Name, addr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTail returns the last n lines of the member's output.
func (m *Member) logTail(n int) string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
