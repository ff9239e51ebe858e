// Package etcdembed starts an embedded etcd (go.etcd.io/etcd/server/v3/embed)
// inside the process, for the tests of keel's examples: the library's own
// tests run an etcd process (storage/etcdstore/etcdtest) and keep the etcd
// server out of the library's go.mod; this package keeps etcdstore tested
// against the embedded server as well.
package etcdembed

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// readyBound is how long Start waits for the server: far above what it
// takes on an idle machine (tens of milliseconds).
const readyBound = 2 * time.Minute

// Server is an embedded etcd.
type Server struct {
	e *embed.Etcd
}

// Start starts a single-member etcd with its data in dir, listening on
// free loopback ports, with settings fit only for tests (no fsync, 10 ms
// ticks), and waits until it serves.
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
		return nil, fmt.Errorf("etcdembed: start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdembed: %w", err)
	case <-time.After(readyBound):
		e.Close()
		return nil, errors.New("etcdembed: not ready after " + readyBound.String())
	}
	return &Server{e: e}, nil
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
