// Package etcdtest gives tests a real etcd: one etcd process (the etcd
// binary, such as Debian's etcd-server) per test binary, a single member on
// free loopback ports with its data in a temporary directory and settings
// fit only for tests (10 ms heartbeats; no fsync where the binary allows
// it), started when the first test asks for it and killed when the tests
// end.
//
// A package's TestMain calls Main; its tests call Client or Endpoints, and
// use a fresh Prefix each so that they can run in parallel on one server.
// When $KEEL_ETCD_ENDPOINTS is set (comma-separated), the tests use that
// etcd instead of starting one. When there is neither, the tests that need
// an etcd are skipped, naming the package to install (apt-get install
// etcd-server), as the LDAP tests are without slapd; an etcd that is
// installed but does not start fails them.
//
// StartCluster starts a cluster of several etcd processes instead, for a
// test that kills, stops and restarts members.
package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Server is a single-member etcd: one etcd process on loopback, with its
// data and its log in a directory.
type Server struct {
	m *Member
}

// startAttempts is how many times Start tries, with other ports each time:
// a port chosen free may be taken by another process (another test binary
// of the same go test) before etcd binds it.
const startAttempts = 3

// Start starts a single-member etcd process (see EtcdBinary) with its data
// and log (etcd.log) in dir, listening on free loopback ports, and waits
// until it serves, at most keeltest.WaitBound. On Linux the kernel kills
// the process when the thread that started it exits (see StartCluster).
// The caller stops it with Close; dir is left to the caller.
func Start(dir string) (*Server, error) {
	bin, err := EtcdBinary()
	if err != nil {
		return nil, err
	}
	return start(bin, dir, time.Now().Add(keeltest.WaitBound))
}

func start(bin, dir string, deadline time.Time) (*Server, error) {
	noFsync := supportsNoFsync(bin)
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		s, err := startOnce(bin, dir, noFsync, deadline)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if time.Now().After(deadline) {
			break
		}
	}
	return nil, fmt.Errorf("etcdtest: start etcd in %s: %w", dir, errors.Join(errs...))
}

func startOnce(bin, dir string, noFsync bool, deadline time.Time) (*Server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	var id [6]byte
	rand.Read(id[:])
	m := &Member{
		// A name of its own, so that waitReady can tell this server
		// from another that took its port.
		Name:      "keel-test-" + hex.EncodeToString(id[:]),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		bin:       bin,
		log:       filepath.Join(dir, "etcd.log"),
	}
	data := filepath.Join(dir, "data")
	// What an attempt that failed left.
	if err := os.RemoveAll(data); err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	if err := os.Remove(m.log); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	m.args = []string{
		"--name", m.Name,
		"--data-dir", data,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.Name + "=" + m.PeerURL,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", m.Name,
		"--heartbeat-interval", "10",
		"--election-timeout", "100",
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
	}
	if noFsync {
		m.args = append(m.args, "--unsafe-no-fsync")
	}
	if err := m.start(); err != nil {
		return nil, err
	}
	s := &Server{m: m}
	if err := s.waitReady(deadline); err != nil {
		m.Kill()
		return nil, err
	}
	return s, nil
}

// waitReady polls the server until it answers a linearizable read as
// itself (its member name), its process exits, or deadline passes. It
// backs off from 1 ms to 50 ms between polls.
func (s *Server) waitReady(deadline time.Time) error {
	// Until etcd listens, a request would wait for a connection: dial.
	addr := strings.TrimPrefix(s.m.ClientURL, "http://")
	pause := time.Millisecond
	for {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		if s.m.crashed() {
			return fmt.Errorf("etcd exited: %s", s.m.logTail(5))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not listening on %s by %s: %w", addr, deadline.Format(time.TimeOnly), err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcdtest: client of %s: %w", s.m.ClientURL, err)
	}
	defer c.Close()
	ready := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ml, err := c.MemberList(ctx)
		if err != nil {
			return err
		}
		if len(ml.Members) != 1 || ml.Members[0].Name != s.m.Name {
			return fmt.Errorf("%s is served by another etcd", s.m.ClientURL)
		}
		_, err = c.Get(ctx, "ready") // needs a leader
		return err
	}
	pause = time.Millisecond
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if s.m.crashed() {
			return fmt.Errorf("etcd exited: %s", s.m.logTail(5))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd at %s not ready by %s: %w", s.m.ClientURL, deadline.Format(time.TimeOnly), err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Endpoints returns the client URL of the server.
func (s *Server) Endpoints() []string { return []string{s.m.ClientURL} }

// Close kills the server's process and waits until it has exited. Its
// directory is left to the caller.
func (s *Server) Close() { s.m.Kill() }

// The etcd of the test binary.
var (
	mainCalled   bool
	envEndpoints []string // of $KEEL_ETCD_ENDPOINTS
	notInstalled error    // there is no etcd binary
	setupErr     error    // Main could not prepare the etcd's directory
	dataDir      string   // where the binary's etcd keeps its data and log

	once      sync.Once // starts the binary's etcd, or ends that it can
	binary    *Server
	binaryErr error
)

// Main runs the tests of m with one etcd: the one of $KEEL_ETCD_ENDPOINTS,
// or an etcd process started when a test first asks for it (Endpoints,
// Client). When the tests end, pass or fail, it kills that process and
// removes its directory, then exits with m's code. When the test binary
// dies without returning from its tests (a panic, -timeout), the kernel
// kills the etcd on Linux (see startBinaryEtcd); its directory, in
// os.TempDir, stays.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	mainCalled = true
	if env := os.Getenv("KEEL_ETCD_ENDPOINTS"); env != "" {
		envEndpoints = strings.Split(env, ",")
		return m.Run()
	}
	if _, err := EtcdBinary(); err != nil {
		notInstalled = err
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keel-etcd-")
	if err != nil {
		setupErr = fmt.Errorf("etcdtest: %w", err)
		return m.Run()
	}
	defer os.RemoveAll(dir)
	dataDir = dir
	code := m.Run()
	// No etcd starts after this; one that started is seen here.
	once.Do(func() { binaryErr = errors.New("etcdtest: the tests have ended") })
	if binary != nil {
		if binary.m.crashed() {
			fmt.Fprintf(os.Stderr, "etcdtest: the tests' etcd exited before they ended; the last lines of its log:\n%s\n", binary.m.logTail(20))
		}
		binary.Close()
	}
	return code
}

// startBinaryEtcd starts the test binary's etcd, waiting until deadline at
// most, from a goroutine locked to its thread for the rest of the process:
// the kernel kills the etcd when that thread exits (Pdeathsig, on Linux),
// which it then does only with the process.
func startBinaryEtcd(deadline time.Time) (*Server, error) {
	if setupErr != nil {
		return nil, setupErr
	}
	type result struct {
		s   *Server
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked
		bin, err := EtcdBinary()
		var s *Server
		if err == nil {
			s, err = start(bin, dataDir, deadline)
		}
		ch <- result{s, err}
		select {} // keeps the thread
	}()
	r := <-ch
	return r.s, r.err
}

// Endpoints returns the endpoints of the binary's etcd, starting it when
// no test did before: waiting until it serves at most keeltest.WaitBound,
// and not past t's deadline (go test -timeout). It skips t when etcd is
// not installed or Main was not called, and fails it when the etcd does not
// start.
func Endpoints(t testing.TB) []string {
	t.Helper()
	switch {
	case !mainCalled:
		t.Skip("no etcd for this test: TestMain does not call etcdtest.Main")
	case envEndpoints != nil:
		return envEndpoints
	case notInstalled != nil:
		t.Skipf("%v (or set KEEL_ETCD_ENDPOINTS to a running etcd)", notInstalled)
	}
	once.Do(func() {
		deadline := time.Now().Add(keeltest.WaitBound)
		if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if d, ok := d.Deadline(); ok && d.Before(deadline) {
				deadline = d
			}
		}
		binary, binaryErr = startBinaryEtcd(deadline)
	})
	if binaryErr != nil {
		t.Fatalf("the test binary's etcd: %v", binaryErr)
	}
	return binary.Endpoints()
}

// Client returns a new client of the binary's etcd, closed when t ends, or
// skips t (see Endpoints).
func Client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := NewClient(Endpoints(t))
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// NewClient returns a client of endpoints, which logs nothing.
func NewClient(endpoints []string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client of %v: %w", endpoints, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
	defer cancel()
	if _, err := c.Get(ctx, "health"); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcdtest: etcd at %v does not answer: %w", endpoints, err)
	}
	return c, nil
}

// Prefix returns a new random key prefix, such as "test-1a2b3c4d5e6f/".
func Prefix() string {
	var b [8]byte
	rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:]) + "/"
}
