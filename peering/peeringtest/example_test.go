package peeringtest_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage/memstore"
)

// Two clusters in one process: the dialer establishes a peering through
// the Network, then cannot reach the acceptor once its address is down.
func Example() {
	ctx := context.Background()
	net := &peeringtest.Network{}
	a, err := peering.New(memstore.New(nil), net, &peering.Options{Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}})
	if err != nil {
		panic(err)
	}
	b, err := peering.New(memstore.New(nil), net, &peering.Options{Datacenter: "dc2", Addresses: []string{"10.0.0.2:8300"}})
	if err != nil {
		panic(err)
	}
	net.Register("10.0.0.1:8300", a)
	net.Register("10.0.0.2:8300", b)

	tok, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a", PeeringToken: tok}))

	tok, err = a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-c"})
	if err != nil {
		panic(err)
	}
	net.SetDown("10.0.0.1:8300", true)
	err = b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a2", PeeringToken: tok})
	fmt.Println(keel.KindOf(err))
	// Output:
	// <nil>
	// unavailable
}
