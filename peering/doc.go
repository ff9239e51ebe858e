// Package peering implements cluster peering between two keel clusters, as
// HashiCorp Consul's cluster peering does: one cluster (the acceptor)
// generates a peering token, the other (the dialer) establishes the
// peering with it, and the two keep a stream of heartbeats that carries
// the service names each exports to the other.
//
// # Basics
//
// A Service is one cluster's side. Open, the root of the peering family,
// is the usual way to build one: it takes the program's store (or a view
// of it) and keeps peering's keys under "peering/" of it, the prefix the
// example server chose before Open existed (its data files are served
// unchanged); a Transport that reaches the peer's servers; and Options
// that name the cluster (Datacenter, ServerName, Addresses) and give the
// Authorizer, which Open requires. Open starts the worker, Close stops it:
//
//	a, err := peering.Open(ctx, storeA, net, &peering.Options{Datacenter: "dc1", Addresses: []string{"10.0.0.1:8300"}, Authorizer: keel.AllowAll{}})
//	defer a.Close() // before the store is closed: defers run last first
//	tok, err := a.GenerateToken(ctx, peering.TokenRequest{PeerName: "cluster-b"})
//	if err := b.Establish(ctx, peering.EstablishRequest{PeerName: "cluster-a", PeeringToken: tok}); err != nil {
//		return err
//	}
//
// The token is the standard base64 of a JSON object with Consul's field
// names: ServerAddresses, ServerName, PeerID (the acceptor's peering id),
// EstablishmentSecret (one use) and Remote (Partition, Datacenter).
// Generating a token again for the same name keeps the peering id and
// replaces the secret: only the newest token works, once.
//
// States: INITIAL from token generation until the dialer exchanges the
// secret; ACTIVE on both sides once it did; FAILING when nothing came
// from the peer for Options.HeartbeatTimeout (ACTIVE again at the next
// heartbeat); TERMINATED after Delete on either side. Delete sets
// DeletedAt; Step tells the peer (which becomes TERMINATED and keeps its
// record until it is deleted there), drops the imported services, then
// removes the peering.
//
// # Operations
//
// The verbs are keel's (Get, List, Put, Delete) and Consul's own
// (GenerateToken, Establish):
//
//   - GenerateToken(ctx, TokenRequest) and Establish(ctx,
//     EstablishRequest) make a peering, on the acceptor's and on the
//     dialer's side;
//   - Get(ctx, name, Query) reads one peering, List(ctx, Query) every
//     peering the caller may read;
//   - Delete(ctx, name, DeleteRequest) deletes one;
//   - PutExportedServices(ctx, name, services) replaces what this cluster
//     exports to one peer; PutExportedServicesEntry(ctx, entry) and
//     GetExportedServicesEntry(ctx, name) write and read Consul's config
//     entry of kind "exported-services", which sets the exports of every
//     peering at once;
//   - Limits() reports the limits that depend on the store.
//
// Get and List are blocking queries, as Consul's: a Query carries the
// index the caller already has (MinIndex), and the read returns as soon
// as the index of its result passes it, or after WaitTime (DefaultWait,
// at most MaxWait). The zero Query reads at once. CreateIndex and
// ModifyIndex are the store's change index at creation and at the last
// change; List's index is the last change of any peering, removals
// included. List is not paged by a cursor: its answer is the whole set
// as of one index, which is what a blocking query watches (see List).
//
// The background work is Step(ctx, now), which returns when it is next
// due; Start and Stop (or Close) run it on the clock. New builds a
// Service over a store its caller has scoped itself and starts nothing:
// it is for a program that chooses its own view, or runs Step itself.
// peeringtest.Network is a Transport between the Services of one process,
// for tests and examples; the Consul adapter (examples/httpapi/consul) has
// an HTTP one.
//
// # Errors
//
// Every error's message starts with "peering: ", once; an adapter that
// speaks Consul's words drops it, as Consul's messages name no package.
// Errors carry keel kinds: keel.KindInvalid with the Go paths of the
// fields of the input (PeerName, Partition, PeeringToken,
// ServerExternalAddresses, Meta, WaitTime, Services[0].Name; Consul's
// JSON names them alike) for rule violations, a used or replaced token, a
// token of this cluster or a name already used by the other role;
// keel.KindNotFound for a missing peering (Delete of a missing peering
// succeeds, as Consul's delete does, where keel's Delete verb would
// answer keel.KindNotFound: the adapters and programs written for Consul
// rely on it);
// keel.KindConflict for a peering being deleted; keel.KindUnavailable when
// the peer cannot be reached; store errors as they come. Open fails with
// keel.KindInvalid naming "Store", "Transport" or "Authorizer" when one is
// nil: allowing everything, anonymous callers included, is never a
// default of Open, and a program that does its own access control says so
// with keel.AllowAll{} (New keeps its nil Authorizer allowing everything).
//
// # Rights
//
// GenerateToken, Establish, Delete and PutExportedServices need
// peering:write, Get needs peering:read, on the resource
// "peering/<name>". List returns the peerings the caller may read and
// sets Filtered when it left some out; a caller with peering:read on no
// peering is refused. PutExportedServicesEntry (Consul's config entry of
// kind "exported-services", name "default") needs peering:write on every
// peering whose exports it changes, and GetExportedServicesEntry needs
// peering:read on every peering the entry names: Consul asks for mesh or
// operator rights there, which keel does not have, and the entry is the
// exports of those peerings. The Handle methods need no right: the
// one-time secret, then the stream secret, is the credential.
//
// # Concurrency
//
// A Service is safe for concurrent use. Every change runs in one store
// transaction; messages to the peer are sent outside transactions. Steps
// run one at a time. The worker is the Service's one goroutine: Open (or
// Start) starts it, Close (or Stop) cancels its Step and waits for it to
// end. Blocked reads and the worker are woken by every
// change of the peerings, whichever process commits it: by this
// Service's commits, and by the store's watch of the change index
// (storage.Watch), so several processes on one etcd see each other's
// changes at once.
//
// # Limits
//
// Limits returns the limits that depend on the store.
// PutExportedServicesEntry changes every peering concerned in one
// transaction; on a store that bounds transactions (etcd) an entry may
// name at most Limits().MaxConsumerPeers peerings (31 on etcd), and a
// larger one is refused up front with keel.KindInvalid on "Services",
// naming the limit. The fixed limits are
// stated where they apply: Meta's (64 pairs, keys of 128 bytes, values of
// 512, as Consul's), and MaxWait, a constant (a blocking query).
//
// # Caveats
//
// Choices where the specification is silent, following Consul: the
// states PENDING and ESTABLISHING are both reported as INITIAL (acceptor)
// or not at all (the dialer stores the peering only once established);
// DELETING is reported as TERMINATED with DeletedAt. The heartbeat
// interval is 15 s and the timeout 2 min, as Consul's stream. Only the
// partition "default" is served: any other is refused on "Partition" (of
// TokenRequest, EstablishRequest, Query, DeleteRequest and
// ExportedServicesEntry). Meta is limited as Consul limits it (64 pairs,
// keys 128 bytes, values 512). Blocking waits get no random
// jitter. The "stream" is the dialer's heartbeats answered by the
// acceptor, so that exports of the acceptor reach the dialer at the next
// heartbeat. If the dialer's store fails after the acceptor accepted the
// secret, the acceptor's side goes FAILING: generate a new token. A
// deleted peering whose peer cannot be told within HeartbeatTimeout is
// removed anyway; its peer learns at its next heartbeat (a dialer) or
// goes FAILING (an acceptor). The exported-services entry applies to the
// peerings that exist when it is set, and to a peering created later
// under a name it lists; consumers are peer names only (no partitions or
// sameness groups).
package peering
