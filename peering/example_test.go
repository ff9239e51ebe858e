package peering_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
	"github.com/keelhq/keel/peering/peeringtest"
	"github.com/keelhq/keel/storage/memstore"
)

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
	if err := b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a", PeeringToken: tok}); err != nil {
		panic(err)
	}
	pa, _, _ := a.Get(ctx, "cluster-b", peering.Query{})
	pb, _, _ := b.Get(ctx, "cluster-a", peering.Query{})
	fmt.Println(pa.State, pa.Remote.Datacenter)
	fmt.Println(pb.State, pb.Remote.Datacenter)
	// Output:
	// ACTIVE dc2
	// ACTIVE dc1
}

func ExampleOpen() {
	ctx := context.Background()
	net := &peeringtest.Network{}
	storeA, storeB := memstore.New(nil), memstore.New(nil)
	defer storeA.Close()
	defer storeB.Close()

	// Each cluster gives its whole store: Open keeps peering's keys under
	// "peering/" and starts the worker. AllowAll is asked for by name:
	// this program does its own access control.
	a, err := peering.Open(ctx, storeA, net, &peering.Options{Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}, Authorizer: keel.AllowAll{}})
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
	pb, _, _ := b.Get(ctx, "cluster-a", peering.Query{})
	fmt.Println(pb.State, pb.Remote.Datacenter)

	// Without an Authorizer, Open refuses.
	_, err = peering.Open(ctx, storeA, net, nil)
	fmt.Println(keel.KindOf(err) == keel.KindInvalid, keel.FieldErrors(err)[0].Field)
	// Output:
	// ACTIVE dc1
	// true Authorizer
}

// A blocking query: Get returns the peering's index, and a Get from that
// index waits (here at most a minute) until the peering changes. The
// change was made already, so it returns at once with the newer index.
func ExampleService_Get() {
	ctx := context.Background()
	a, err := peering.New(memstore.New(nil), &peeringtest.Network{}, &peering.Options{Addresses: []string{"10.0.0.1:8300"}})
	if err != nil {
		panic(err)
	}
	if _, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"}); err != nil {
		panic(err)
	}
	p, idx, err := a.Get(ctx, "cluster-b", peering.Query{})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.State, idx == p.ModifyIndex)

	if err := a.PutExportedServices(ctx, "cluster-b", []string{"web"}); err != nil {
		panic(err)
	}
	p, next, err := a.Get(ctx, "cluster-b", peering.Query{MinIndex: idx, WaitTime: time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Println(next > idx, p.StreamStatus.ExportedServices)

	_, _, err = a.Get(ctx, "cluster-c", peering.Query{})
	fmt.Println(keel.KindOf(err), err)
	// Output:
	// INITIAL true
	// true [web]
	// not found peering: peering "cluster-c": not found
}

// List answers every peering the caller may read as of one index, the
// MinIndex of the next blocking List.
func ExampleService_List() {
	ctx := context.Background()
	a, err := peering.New(memstore.New(nil), &peeringtest.Network{}, &peering.Options{Addresses: []string{"10.0.0.1:8300"}})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"cluster-c", "cluster-b"} {
		if _, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: name}); err != nil {
			panic(err)
		}
	}
	l, err := a.List(ctx, peering.Query{})
	if err != nil {
		panic(err)
	}
	for _, p := range l.Peerings {
		fmt.Println(p.Name, p.State, p.ModifyIndex <= l.Index)
	}
	fmt.Println(l.Filtered)
	// Output:
	// cluster-b INITIAL true
	// cluster-c INITIAL true
	// false
}

// The exported-services entry sets what this cluster exports to each peer
// it names; Limits says how many peers one entry may name on the store
// (0: no bound, as on memstore).
func ExampleService_PutExportedServicesEntry() {
	ctx := context.Background()
	a, err := peering.New(memstore.New(nil), &peeringtest.Network{}, &peering.Options{Addresses: []string{"10.0.0.1:8300"}})
	if err != nil {
		panic(err)
	}
	if _, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"}); err != nil {
		panic(err)
	}
	err = a.PutExportedServicesEntry(ctx, &peering.ExportedServicesEntry{
		Name: "default",
		Services: []peering.ExportedService{
			{Name: "web", Consumers: []string{"cluster-b"}},
			{Name: "api", Consumers: []string{"cluster-b", "cluster-c"}},
		},
	})
	if err != nil {
		panic(err)
	}
	p, _, err := a.Get(ctx, "cluster-b", peering.Query{})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.StreamStatus.ExportedServices)
	e, _, err := a.GetExportedServicesEntry(ctx, "default")
	if err != nil {
		panic(err)
	}
	fmt.Println(len(e.Services), e.Services[1].Consumers)
	fmt.Println(a.Limits().MaxConsumerPeers)
	// Output:
	// [api web]
	// 2 [cluster-b cluster-c]
	// 0
}
