// Package etcdtest starts a real etcd for tests: one embedded server
// (go.etcd.io/etcd/server/v3/embed) per test binary, on loopback ports
// chosen by the system, in a temporary directory, with settings fit only for
// tests (no fsync, 10 ms ticks).
//
// A package's TestMain calls Main; its tests call Client or Endpoints, and
// use a fresh Prefix each so that they can run in parallel on one server.
// When $KEEL_ETCD_ENDPOINTS is set (comma-separated), the tests use that
// etcd instead of starting one. When no etcd can be had, the tests that need
// it are skipped with the reason.
//
// StartCluster starts a cluster of separate etcd processes instead (the etcd
// binary, such as Debian's etcd-server), for a test that kills, stops and
// restarts members.
package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an embedded etcd.
type Server struct {
	e   *embed.Etcd
	dir string
}

// Start starts a single-member etcd with its data in dir, listening on
// free loopback ports, and waits until it serves.
func Start(dir string) (*Server, error) {
	cfg := embed.NewConfig()
	cfg.Name = "keel-test"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	u, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls = []url.URL{*u}
	cfg.AdvertiseClientUrls = []url.URL{*u}
	cfg.ListenPeerUrls = []url.URL{*u}
	cfg.AdvertisePeerUrls = []url.URL{*u}
	cfg.InitialCluster = cfg.Name + "=" + u.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdtest: embedded etcd failed: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, errors.New("etcdtest: embedded etcd not ready after 30s")
	}
	return &Server{e: e, dir: dir}, nil
}

// Endpoints returns the client URLs of the server.
func (s *Server) Endpoints() []string {
	var eps []string
	for _, l := range s.e.Clients {
		eps = append(eps, "http://"+l.Addr().String())
	}
	return eps
}

// Close stops the server. Its directory is left to the caller.
func (s *Server) Close() { s.e.Close() }

var (
	endpoints []string
	startErr  error
)

// Main runs the tests of m with one etcd: the one of $KEEL_ETCD_ENDPOINTS,
// or an embedded one started for the binary and stopped after. It exits the
// process with m's code.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if env := os.Getenv("KEEL_ETCD_ENDPOINTS"); env != "" {
		endpoints = strings.Split(env, ",")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keel-etcd-")
	if err != nil {
		startErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	srv, err := Start(dir)
	if err != nil {
		startErr = err
		return m.Run()
	}
	defer srv.Close()
	endpoints = srv.Endpoints()
	return m.Run()
}

// Endpoints returns the endpoints of the binary's etcd, or skips t when
// there is none (Main was not called, or the server did not start).
func Endpoints(t testing.TB) []string {
	t.Helper()
	switch {
	case startErr != nil:
		t.Skipf("no etcd for this test: %v (set KEEL_ETCD_ENDPOINTS to use a running etcd)", startErr)
	case endpoints == nil:
		t.Skip("no etcd for this test: TestMain does not call etcdtest.Main")
	}
	return endpoints
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
