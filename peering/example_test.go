package peering_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	net := &peering.InProcess{}
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

func ExampleOpen() {
	ctx := context.Background()
	net := &peering.InProcess{}
	storeA, storeB := memstore.New(nil), memstore.New(nil)
	defer storeA.Close()
	defer storeB.Close()

	// Each cluster gives its whole store: Open keeps peering's keys under
	// "peering/" and starts the worker. AllowAll is asked for by name:
	// this program does its own access control.
	a, err := peering.Open(ctx, storeA, net, &peering.Options{
		Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}, Authorizer: keel.AllowAll{},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close() // before the store is closed: defers run last first
	b, err := peering.Open(ctx, storeB, net, &peering.Options{
		Datacenter: "dc2", Addresses: []string{"10.0.0.2:8300"}, Authorizer: keel.AllowAll{},
	})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	net.Register("10.0.0.1:8300", a)
	net.Register("10.0.0.2:8300", b)

	tok, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"})
	if err != nil {
		panic(err)
	}
	if err := b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a", PeeringToken: tok}); err != nil {
		panic(err)
	}
	pb, _, _ := b.Read(ctx, "cluster-a", nil)
	fmt.Println(pb.State, pb.Remote.Datacenter)

	// Without an Authorizer, Open refuses.
	_, err = peering.Open(ctx, storeA, net, nil)
	fmt.Println(keel.KindOf(err) == keel.KindInvalid, keel.FieldErrors(err)[0].Field)
	// Output:
	// ACTIVE dc1
	// true Authorizer
}
