// Package consul serves keel's cluster peering (package peering) in
// HashiCorp Consul's HTTP dialect, so that Consul's Go client
// (github.com/hashicorp/consul/api) works against it, and carries the
// peer-to-peer messages of peering over HTTP (HTTPTransport).
//
// # Basics
//
// Routes: POST /v1/peering/token, POST /v1/peering/establish (answers
// {}), GET and DELETE /v1/peering/{name}, GET /v1/peerings, PUT
// /v1/config with a config entry of kind "exported-services" (answers
// true; each peer named among the consumers exports those services, a
// peer no longer named exports none) and GET
// /v1/config/exported-services/default, and the
// peer-to-peer paths POST /v1/internal/peering/{exchange,heartbeat,
// terminate}. Reads take ?index and ?wait (a Go duration, or seconds)
// for blocking queries, ?partition, and accept ?consistent and ?stale
// (every read is consistent). They answer X-Cluster-Index (never 0) and
// X-Consul-Index with the same value, and, when the caller's rights left
// peerings out of a list, X-Cluster-Results-Filtered-By-ACLs: true (and
// X-Consul-Results-Filtered-By-ACLs, which Consul's client reads).
//
// A blocking read always gets its answer, whatever the server's
// WriteTimeout: a read with ?index waits ?wait (5 minutes without it, as
// Consul; at most 10 minutes), and when the server's WriteTimeout would
// close the connection before that wait plus AnswerMargin, the handler
// moves this request's write deadline to the wait plus AnswerMargin
// (http.ResponseController.SetWriteDeadline; a middleware's
// ResponseWriter must have an Unwrap method for it to work). Behind a
// writer that cannot move its deadline, the wait is shortened to the
// WriteTimeout less AnswerMargin instead, and the read answers as a wait
// that ended does: the current state and index. Other requests keep the
// server's WriteTimeout.
//
// The caller is the keel.Principal of the request's context: the server
// maps the X-Cluster-Token header to it. The peer-to-peer paths need no
// token: the peering secrets are their credentials. The config entry
// needs peering:write (PUT) and peering:read (GET) on the peerings it
// names, where Consul asks for mesh/operator rights, which keel does not
// have.
//
// # Errors
//
// Errors answer a text body with the status of the one table in
// respond.go: 400 for invalid requests, 403 "Permission denied", 404 for
// a missing peering, 405 for another method, 409 for a peering being
// deleted, 503 for an unreachable peer, 500 "internal error" otherwise.
//
// An invalid request's text names each field: the Go path that package
// peering gives it in its input, which is also Consul's JSON name
// ("PeerName", "Partition", "Services[0].Consumers[0].Peer"), so that no
// table translates them. The rules of a peering and of the
// exported-services entry (names, partition, meta, peers) are package
// peering's; the adapter checks only what Consul has and keel does not
// (other kinds, ?cas, namespaces, consumers other than peers).
//
// # Concurrency
//
// A Handler and an HTTPTransport are safe for concurrent use.
//
// # Caveats
//
// Patterns carry no method so that they win over a "/v1/" catch-all of
// another adapter on the same mux, and answer 405 themselves. Delete
// answers 200 with an empty body. Config entries of other kinds, ?cas,
// namespaces and partitions other than "default", and consumers that
// name a partition or sameness group answer 400.
package consul
