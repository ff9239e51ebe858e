package main

import (
	"context"
	"fmt"

	"github.com/keelhq/keel/examples/httpapi/consul"
	"github.com/keelhq/keel/peering"
)

// cluster is what names this server to peer clusters: the -datacenter and
// -advertise flags.
type cluster struct {
	datacenter string // empty: "dc1"
	advertise  string // host:port peers reach this server at; empty: -addr
}

// mountConsul serves cluster peering (package peering, opened over the
// server's store by peering.Open, which chooses the keys) in Consul's
// dialect (token header X-Cluster-Token), with the peer-to-peer messages
// over HTTP. peering.Open starts the peering worker (heartbeats, failure
// detection, clean-up after delete), which runs until the server stops and
// closes the Service; with -etcd, on one server of the deployment at a
// time (the election "peering"). A server that serves TLS speaks to its
// peers over https.
func mountConsul(mux *routes, d *deps) error {
	var addrs []string
	if d.cluster.advertise != "" {
		addrs = []string{d.cluster.advertise}
	}
	transport := &consul.HTTPTransport{}
	if d.tls {
		// Peer clusters of a TLS server serve TLS too; their CA must be
		// trusted by this process (the system's roots, or SSL_CERT_FILE).
		transport.Scheme = "https"
	}
	svc, err := peering.Open(context.Background(), d.store, transport, &peering.Options{
		Datacenter: d.cluster.datacenter, Addresses: addrs,
		Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger, Observer: d.observer(),
		Leader: d.leader("peering"), HeartbeatInterval: d.peeringHeartbeat,
	})
	if err != nil {
		return fmt.Errorf("consul: %w", err)
	}
	d.onClose(svc.Close)
	consul.New(svc, &consul.Options{Logger: d.logger}).Register(mux)
	return nil
}
