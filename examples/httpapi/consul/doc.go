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
// terminate}. Reads take ?index and ?wait (a Go duration such as "30s",
// as Consul: "30" has no unit and is refused) for blocking queries,
// ?partition, and accept ?consistent and ?stale (every read is
// consistent). They answer X-Cluster-Index (never 0) and
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
// maps the X-Cluster-Token header (HeaderClusterToken; Consul's
// X-Consul-Token), or Authorization: Bearer, to it. A request without a
// principal that carries a token in one of these two headers has a token
// the program does not know: every client route answers it 403 "ACL not
// found", as Consul, before calling package peering; a request with no
// token is the anonymous caller, whose rights the Authorizer decides. The
// peer-to-peer paths need no token: the peering secrets are their
// credentials. The config entry needs peering:write (PUT) and
// peering:read (GET) on the peerings it names, where Consul asks for
// mesh/operator rights, which keel does not have.
//
// Bodies of the client routes are decoded as Consul decodes them: a field
// the request does not have (a misspelt "ServerExternalAddress") answers
// 400 "Body decoding failed: json: unknown field …" ("Request decoding
// failed: …" for a config entry); names match without regard to case, and
// a consumer takes Consul's aliases "peer_name" and "sameness_group".
// Every field consul/api sends is accepted. The peer-to-peer paths ignore
// fields they do not have, so that peers of two versions understand each
// other.
//
// # Errors
//
// Errors answer a text body with the status of the one table in
// respond.go: 400 for invalid requests, 403 for want of a right, 404 for
// a missing peering, 405 for another method, 409 for a peering being
// deleted, 503 for an unreachable peer, 500 "internal error" otherwise.
// The body is package peering's message without the "peering: " that
// starts it: Consul's messages name no package.
// A 403 for want of a right is worded as Consul's: "Permission denied:
// anonymous token lacks permission 'peering:read'. The anonymous token is
// used implicitly when a request does not specify a token." or
// "Permission denied: token with AccessorID '<ClientTokenID>' lacks
// permission 'peering:write'" (peering:read for a GET, peering:write
// otherwise).
//
// What the adapter refuses itself is answered in Consul's words: 400
// "Invalid wait time", "Invalid index", "Must specify a name to fetch."
// (GET or DELETE /v1/peering/), 403 "ACL not found", and 403 "a new
// peering token must be generated: invalid peering establishment secret"
// for an establish whose secret the acceptor refused (used, replaced by a
// newer token, or of a peering gone). Package peering classifies that
// refusal as invalid, as the token's other problems (not a token, a token
// of this cluster), which stay 400: HTTPTransport marks it, the
// acceptor's exchange path answering 403 as Consul's answers
// PermissionDenied.
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
// another adapter on the same mux, and answer 405 themselves; /v1/peering
// without its slash is redirected to /v1/peering/ by the mux. Delete
// answers 200 with an empty body, as Consul.
//
// # Differences from Consul
//
// The answers that still differ from Consul 1.22's; the notes say why.
//
//	what                                Consul                          keel
//	GET /v1/peerings, rights on some    200, every peering               200, the peerings it may read, and
//	peerings only [1]                                                   the filtered header
//	config entry rights [2]             mesh or operator rights         peering:write (PUT), peering:read (GET)
//	                                                                    on the peerings the entry names
//	config entries [3]                  every kind, ?cas, namespaces,   exported-services only; the rest is
//	                                    partitions, sameness groups     400 naming the field
//	token headers [4]                   X-Consul-Token, Authorization,  what the program maps (example server:
//	                                    ?token                          X-Cluster-Token, Authorization)
//	403 for want of a right [5]         names the token's AccessorID    names the principal's ClientTokenID
//	refused establishment secret [6]    "rpc error: code = Permission-  the same text without the gRPC prefix;
//	                                    Denied desc = a new peering     400 with a transport other than
//	                                    token must be generated: …"     HTTPTransport
//	?wait negative [7]                  the default wait                400 "Invalid wait time"
//	400 texts of broken rules [8]       Consul's own texts              keel's, naming each field
//
// [1] Rights are per peering in keel ("peering/<name>"), where Consul's
// peering:read is one right. A caller with peering:read on no peering
// (anonymous included) is refused 403, in Consul's words, as Consul
// refuses it: package peering asks the Authorizer (keel.AuthorizeAny); an
// Authorizer that cannot tell lets the list answer 200 with the peerings
// it may read, none. A token the program does not know answers 403 "ACL
// not found". [2] keel has no mesh or operator rights. [3] Package peering
// serves the exported-services entry only. [4] X-Cluster-Token is the
// spec's name; ?token is not read. [5] keel has no accessor ids. [6]
// keel's peers speak HTTP, not gRPC; package peering classifies the
// refusal as invalid, and only HTTPTransport tells it from the token's
// other problems. [7] A negative wait is a client's mistake, which
// package peering refuses too. [8] One text per rule for every dialect.
package consul
