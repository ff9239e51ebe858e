package peering_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	net := &peering.InProcess{}
	a := peering.New(memstore.New(nil), net, &peering.Options{Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}})
	b := peering.New(memstore.New(nil), net, &peering.Options{Datacenter: "dc2", Addresses: []string{"10.0.0.2:8300"}})
	net.Register("10.0.0.1:8300", a)
	net.Register("10.0.0.2:8300", b)

	tok, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"})
	if err != nil {
		panic(err)
	}
	if err := b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a", PeeringToken: tok}); err != nil {
		panic(err)
	}
	pa, _, _ := a.Read(ctx, "cluster-b", nil)
	pb, _, _ := b.Read(ctx, "cluster-a", nil)
	fmt.Println(pa.State, pa.Remote.Datacenter)
	fmt.Println(pb.State, pb.Remote.Datacenter)
	// Output:
	// ACTIVE dc2
	// ACTIVE dc1
}
