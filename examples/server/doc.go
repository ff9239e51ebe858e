// Server is a runnable keel server: keel's HTTP adapters over one store,
// behind one token check and one authorizer. It is meant to be read as
// much as run: a model of how a program embeds keel.
//
//	go run ./examples/server
//
// serves http://127.0.0.1:8200 over the bbolt file keel.db in the working
// directory. At the first start over a file it generates a root token and
// prints it, once, on a line of its own:
//
//	Root Token: kr.7QzGq0w3nJk2mZ9aTfYx1bLc
//
// and keeps it with the data (see Root token): later starts over the same
// file print nothing, and the token keeps working. Then:
//
//	curl http://127.0.0.1:8200/v1/sys/health
//	{"initialized":true,"sealed":false,"standby":false,"performance_standby":false,
//	 "replication_performance_mode":"disabled","replication_dr_mode":"disabled",
//	 "server_time_utc":1767225600,"version":"dev","enterprise":false,
//	 "cluster_name":"keel-cluster-5f1a2b3c","cluster_id":"5f1a2b3c-…",
//	 "echo_duration_ms":0,"clock_skew_ms":0,"replication_primary_canary_age_ms":0}
//
// Vault's own clients work unmodified with VAULT_ADDR and VAULT_TOKEN:
//
//	export VAULT_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=kr.7QzGq0w3nJk2mZ9aTfYx1bLc
//	vault status
//	vault kv put secret/app password=s3cr3t
//	vault kv get secret/app
//
// SIGINT or SIGTERM stops it gracefully: it accepts no more connections,
// waits (up to 30 seconds) for the requests in flight, stops the adapters
// and closes the store. A second signal ends it at once.
//
// # Flags
//
//	-addr HOST:PORT        listen address (default 127.0.0.1:8200; port 0 picks one)
//	-data PATH             bbolt file of the store (default keel.db); "memory" keeps
//	                       the store in memory, gone when the process ends
//	                       (write ./memory for a file of that name)
//	-etcd ENDPOINTS        run on etcd instead of -data: comma-separated endpoints
//	                       such as http://10.0.0.1:2379,http://10.0.0.2:2379.
//	                       Several servers may share it; one at a time (elected
//	                       through etcd) runs the background work, such as lease
//	                       expiry, and another takes over when it stops, or
//	                       -leader-ttl after it dies
//	-etcd-prefix PREFIX    with -etcd, the prefix of every key (default keel/):
//	                       one per deployment sharing an etcd
//	-leader-ttl DURATION   with -etcd, how long a dead server keeps the background
//	                       work before another takes it over (default 10s, whole
//	                       seconds)
//	-root-token TOKEN      the root token of this run (or the environment variable
//	                       KEEL_ROOT_TOKEN, which the process list does not show);
//	                       when neither is given, the one kept with the data, or at
//	                       the first start a new one (see Root token)
//	-seal-key-file PATH    encrypt every stored value with AES-256-GCM under the keys
//	                       of PATH: one key per line, hex or base64, the first one
//	                       active, the others still accepted for reading (see
//	                       sealstore.ParseKeys). Keys and key names stay in clear.
//	-config FILE           JSON file of policies and tokens (below)
//	-hold-leases           start with the lease manager held: no lease is revoked
//	                       at its time until DELETE /v1/sys/leases/hold (after a
//	                       snapshot restore; see Snapshots and migration)
//	-datacenter NAME       this cluster's datacenter, for cluster peering (default dc1)
//	-advertise HOST:PORT   where peer clusters reach this server (default: -addr)
//	-max-inflight-bytes N  at most N bytes of request and response bodies in flight
//	                       (default 33554432, 32 MiB, Vault's max_request_size); 0:
//	                       no bound. See Limits
//	-pprof HOST:PORT       serve net/http/pprof's /debug/pprof/ on this address, on
//	                       a listener of its own and without a token: use a loopback
//	                       address (off by default; bench/http.sh's profiles use it)
//	-tls-cert FILE         serve HTTPS with this PEM certificate (chain); needs -tls-key
//	-tls-key FILE          the PEM private key of -tls-cert
//	-dev-tls               serve HTTPS with a throwaway CA and server certificate made
//	                       at start, for development (below); excludes -tls-cert
//	-dev-tls-dir DIR       where -dev-tls writes its files (kept after the server
//	                       stops); default: a new temporary directory, removed at stop.
//	                       Created 0700 when missing. Refused when it, or a file in
//	                       it that -dev-tls writes, is a symbolic link or grants
//	                       group or others any permission (see TLS)
//
// # TLS
//
// With -tls-cert and -tls-key the server speaks only HTTPS (TLS 1.2 and
// later, HTTP/2 too). -dev-tls is the development mode, as Vault's: at
// every start it makes a new CA (ECDSA P-256, valid 30 days, its private
// key never written) and a server certificate signed by it for localhost,
// 127.0.0.1, ::1 and the hosts of -addr and -advertise, writes ca.pem,
// cert.pem and key.pem into a directory, and prints where the CA is, once,
// on a line of its own:
//
//	Dev TLS CA: /tmp/keel-dev-tls-123456/ca.pem
//
// Clients trust that file: SSL_CERT_FILE for Terraform and go-tfe (and
// any Go program on Linux), curl --cacert. The three files are of mode
// 0600, readable by their owner only, each created new and renamed over
// the one of an earlier start; a symbolic link is never followed. In a
// -dev-tls-dir, a file of an earlier start that others may read or write
// is refused, not replaced: its key may have been read (remove it).
// With TLS on, cluster peering speaks to peer servers over https too.
//
// The Terraform tfe provider finds the API through GET
// https://HOSTNAME/.well-known/terraform.json, which the server answers
// without a token (services tfe.v2, tfe.v2.1 and tfe.v2.2 at /api/v2/):
// with TLS on, nothing but the provider's hostname and a token is needed.
//
//	go run ./examples/server -dev-tls -root-token "$TOKEN"
//	export SSL_CERT_FILE=/tmp/keel-dev-tls-123456/ca.pem
//
//	provider "tfe" {
//	  hostname = "localhost:8200"
//	  token    = var.token
//	}
//
// # Root token
//
// The root token holds the built-in "root" policy, which grants everything.
// It is, in this order:
//
//   - the token of -root-token, else of the environment variable
//     KEEL_ROOT_TOKEN: the root token of that run only. Nothing is kept,
//     and a token kept with the data is not accepted during that run.
//   - else the token kept with the data: the one generated at the first
//     start over the same store (-data file, or etcd). The store keeps its
//     SHA-256 digest, never the token, under the key "server/state",
//     sealed like every value when -seal-key-file is set; the digest
//     authenticates the token and cannot be used as one.
//   - else a new one ("kr." and 24 base62 characters), generated, kept
//     once the server listens (a start that fails before keeps nothing),
//     and printed to stderr once. With -etcd, the first server of a
//     deployment to keep one wins, and the others print nothing.
//
// With -data memory nothing outlives the process: each start prints a new
// token. A kept token that was lost cannot be printed again: start with
// -root-token to get in. A token given with -root-token is visible in the
// process list to other users of the machine: beyond a laptop, use
// KEEL_ROOT_TOKEN, the kept token, or a token of the config file with the
// "root" policy.
//
// The same record holds the cluster's identity, made at the first start:
// the cluster_id (a UUID) and cluster_name ("keel-cluster-" and its first
// 8 hex digits) of sys/health and sys/seal-status.
//
// Logs go to stderr, in slog's text format: one line per request with its
// method, path, status, size, duration and principal ID. Each request is
// an operation of keel's instrumentation seam (keel.Observer), named
// "http.Request", whose outcome is the kind of its status: the request
// log is one consumer of it, the metrics and traces below the others. Tokens and query
// strings are never logged. Request lines are written in batches of 32 KiB,
// or 100 ms after the first line of a batch, so that under load a request
// does not pay a write of its own: a server killed with SIGKILL may lose
// the request lines of its last 100 ms (never data: a write is
// acknowledged once committed).
//
// # Limits
//
// Before an adapter sees a request, the server (limits.go) refuses, with
// 400 in the dialect of the path (Vault's {"errors":[…]}, a JSON:API error
// document under /api/, Consul's plain text under its paths):
//
//   - a path longer than 4096 bytes (the stores' default key size, Linux's
//     PATH_MAX), or with a segment longer than 1024 bytes. The whole
//     request line and headers are bounded by net/http's 1 MiB.
//
// It bounds the bytes of request and response bodies in flight to
// -max-inflight-bytes. A request reserves, before it is served, the length
// of its body (the cap of its path when the length is not announced, so
// that chunked uploads queue rather than each hold a part of the budget;
// when the bound is below that cap, the bytes read beyond the bound count
// as they arrive, and a read that would pass it fails, 413). While it is
// served, it reserves the values of 64 KiB or more that it loads (a kv
// secret, twice: the stored JSON and the decoded data; policy code) before
// they are loaded: the library asks through the keel.Reserver the server
// puts in the request's context, from the sizes the store keeps, so the
// bound holds after a restart as before it. A request that holds nothing
// yet waits for that room; one that holds a part already is refused at
// once rather than wait holding it (503 with Retry-After). The bytes of a
// response beyond what was reserved count as they are written; all is
// given back when the request ends. A request that does not fit waits,
// first come first served (one of at most 64 KiB passes the queue when it
// fits), up to 10 seconds, then answers 503 with "Retry-After: 1". A
// request larger than the bound runs alone. After a request that held 4
// MiB or more of bodies, the server runs a garbage collection before it
// gives its reservation back, so that the next request does not allocate
// before the copies are freed; GOMEMLIMIT bounds the heap further.
//
// The heap a body costs is a few times its size. On a bbolt file with a
// bound of 64 MiB, 16 concurrent reads of 30 MiB secrets after a restart
// peak at about 536 MiB of RSS over the idle process, 480 MiB of which are
// the pages of the values in the file (TestInflightMemoryBound). A write
// holds its body four or five times at its peak (the bytes read, the
// decoded value, the encoded value, the store's copy, and bbolt's page),
// and bbolt rewrites the pages of the large values that share a leaf with
// it: 16 concurrent chunked writes of 30 MiB peak at 770 to 870 MiB over
// idle, about 600 MiB of which are file pages; on the memory store, at
// 646 MiB, 480 MiB of which are the values.
//
// Individual adapters keep their own caps on one body: 32 MiB in the Vault
// dialect, 1 MiB in the JSON:API and Consul dialects (a policy upload: 10
// MiB). A body announced beyond the cap of its path is refused at once,
// 413, and no reservation exceeds it.
//
// A request whose token the server does not know (none, or an unknown one)
// reserves from a budget of its own, 2 MiB (or -max-inflight-bytes when
// smaller), never from the one of the requests whose token is known: an
// anonymous connection that announces a large body and trickles it keeps
// no authenticated caller waiting. Every request body must arrive at 64
// KiB/s at least, counted from its first read after 2 seconds of grace:
// a slower one is cut off (the adapter answers 400) instead of holding its
// reservation until the 30-second read timeout.
//
// # Config file
//
// The -config file defines policies, each a list of keel.Rule, and the
// tokens besides the root token:
//
//	{
//	  "policies": {
//	    "reader": [{"path": "secret/*", "capabilities": ["read", "list"]}],
//	    "writer": [
//	      {"path": "secret/app/*", "capabilities": ["create", "read", "update", "delete", "list"]},
//	      {"path": "secret/app/admin/*", "capabilities": ["deny"]}
//	    ]
//	  },
//	  "tokens": [
//	    {"token": "t-alice", "principal": {"id": "alice", "display_name": "alice", "entity_id": "e-1"}, "policies": ["reader"]},
//	    {"token": "t-ci", "principal": {"id": "ci"}, "policies": ["reader", "writer"]}
//	  ]
//	}
//
// Paths and capabilities are those of keel.Rule and keel.RuleAuthorizer: a
// trailing "*" matches any rest, a "+" segment matches one segment, and
// "deny" refuses everything the rule matches. The policy "root" is built in:
// a token may hold it, the file may not define it.
//
// The file is checked as a whole and every problem is reported at once: a
// field the format does not have, a rule NewRuleAuthorizer refuses, a token
// that names a policy the file does not define, an empty or repeated token
// (or the root token again), and a principal without an "id". Each
// problem names its place in the file: tokens[1].principal.id,
// policies["dev"][0].path. The "display_name" defaults to the "id";
// "entity_id" is optional.
//
// # Tokens
//
// A request carries its token in the header of its API's dialect:
//
//	X-Secrets-Token: <token>         Vault-style API (the service's document)
//	X-Vault-Token: <token>           Vault-style API (Vault's clients: VAULT_TOKEN)
//	Authorization: Bearer <token>    TFE-style (JSON:API) API, the tfe provider's token;
//	                                 Vault's clients may send it too
//	X-Cluster-Token: <token>         Consul-style API
//
// The first of these that holds a token, in this order, is the request's
// token; the others are not read, even when it is unknown (the request is
// then anonymous, never authenticated by another header). An empty header,
// and an Authorization header of another scheme than Bearer, hold none.
//
// A known token puts its keel.Principal in the request's context
// (keel.WithPrincipal), with the principal's policies and a ClientTokenID
// of the first 8 hex digits of the token's SHA-256, which names the token
// without revealing it. A missing or unknown token leaves the request
// anonymous; the adapter and the authorizer decide what an anonymous
// caller may do, and apart from public endpoints such as the health check
// that is nothing.
//
// # Adapters
//
// GET /v1/sys/health, /v1/sys/seal-status and /v1/sys/leader (what
// `vault status` reads) answer without a token. The Vault-style adapter
// (package examples/httpapi/vault) serves kv version 1 mounts ("secret/"
// from the first start; more with POST /v1/sys/mounts/:path), the ldap and
// openldap directory engines ("ldap/" and "openldap/"), identity groups,
// password policies, and the lease endpoints under /v1/sys/leases/. The
// mounts are a mount.Table over the server's store: one lease manager
// serves every engine; its worker runs while the server does, and revokes
// at start what expired while the server was down. A stored mount that no
// longer validates is logged and not served; the others are. The Consul-style adapter
// (package examples/httpapi/consul) serves cluster peering under
// /v1/peering/ and /v1/peerings, and the exported services of peers as
// Consul's "exported-services" config entry (PUT /v1/config). With -etcd,
// each background worker (lease expiry, peering heartbeats) has its own
// election, so that one server of the deployment runs it.
//
// # Audit
//
// Vault's audit routes manage file devices (package audit), so that `vault
// audit enable file file_path=/var/log/keel/audit.log`, `vault audit list`
// and `vault audit disable file/` work unmodified; each needs sudo on
// sys/audit. A device's configuration and salt are kept in the store,
// sealed like every value: the devices come back at the next start, and a
// value's hash (POST /v1/sys/audit-hash/:path, {"input": …}) stays the
// same. Once a device is enabled, every request under /v1/ but the status
// endpoints (sys/health, sys/seal-status, sys/leader) is recorded before it
// is served and its response after: a request no device records within 1 s
// is refused with 503 and not served; a response no device records is
// withheld and 503 answered instead. SIGHUP reopens the files, as after a
// rotation; a file renamed or deleted is noticed at the next record anyway.
//
// Differences from Vault: the one device type is "file", with the options
// file_path (a path; Vault's "stdout" and "discard" are refused) and mode;
// other options (log_raw, hmac_accessor, format, prefix…) are refused with
// 400 naming them. A device whose file cannot be opened at start is logged
// and left out, instead of failing the start. Each record carries a
// "chain" object (sequence number and the previous record's hash) that
// Vault's records do not have; Vault answers 500 where this server answers
// 503. A server follows the devices kept in the store: one enabled or
// disabled through another server on the same etcd (or brought by a
// restore) is enabled or disabled here soon after, without a restart.
//
//	go run ./examples/server audit verify audit.log.1 audit.log
//
// verifies the chain of a log, given as its files oldest first (see
// audit.Verify), and prints the count of records and the last record's
// hash. It exits with status 0 when the chain is intact, 1 with the line
// where it breaks otherwise.
//
// # Metrics and traces
//
// GET /v1/sys/metrics?format=prometheus (Vault's path; read on sys/metrics)
// answers the Prometheus text format of what package telemetry measures:
// the requests (operation "http.Request") and the operations of the
// mount table's engines and lease manager (keel_operation_duration_seconds,
// by operation and outcome) and the
// lease counts (vault_expire_num_leases,
// vault_expire_num_irrevocable_leases, keel_lease_due, counted at each
// scrape), and the records no audit device wrote
// (vault_audit_log_request_failure_total, …_response_failure_total). Vault answers JSON without format=; this server serves the
// Prometheus format only and answers 400 for another. With
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
// each operation is also a span exported over OTLP/gRPC, configured by the
// exporter's OTEL_* variables.
//
// # Snapshots and migration
//
//	go run ./examples/server snapshot save -data keel.db keel.snap
//	go run ./examples/server snapshot restore -data new.db keel.snap
//	go run ./examples/server migrate -from bolt:keel.db -to etcd:127.0.0.1:2379
//
// save writes a point-in-time copy of a store (package snapshot: a
// versioned stream with a checksum) of -data, or of -etcd and
// -etcd-prefix; restore writes one into an empty store (-replace: into one
// that holds keys), after checking the whole stream: a corrupt or cut copy
// is refused before anything is written. migrate copies a bbolt file to
// etcd ("etcd:ENDPOINTS#PREFIX" for another prefix than keel/), or back,
// showing a progress bar; killed halfway, it is run again and goes on.
// Values are copied as stored, sealed ones sealed: the server is then
// started with the seal keys of the one copied. A server locks its bbolt
// file: stop it first (on etcd, the servers may run). A restore opens
// held: it holds the copy's leases before it writes the copy's first key,
// and the next server started on it marks the engines (their credentials
// are checked again) and serves with the leases that fell due while the
// copy sat on disk kept, their credentials alive, until an operator
// releases them (DELETE /v1/sys/leases/hold). Online, vault/api's
// RaftSnapshot and RaftSnapshotRestore (`vault operator raft snapshot
// save|restore`) do the same through /v1/sys/storage/raft/snapshot (sudo):
// the archive holds the store's values in clear (keep it secret), and a
// restore keeps the running server's identity, root token and audit
// devices. Uploads are bounded as every Vault request body (32 MiB):
// restore a larger copy offline.
//
// # Adding an adapter
//
// An adapter is a function that registers routes on the server's routes
// (an http.ServeMux with a shortcut to the mounts, routes.go), built from
// the server's deps (store, authorizer, clock, logger). Put it in a file
// of its own, as vault.go:
//
//	func mountVault(mux *routes, d *deps) error {
//		table, err := mount.Open(context.Background(), d.store, &mount.Options{
//			Authorizer: d.authorizer, Clock: d.clock, Logger: d.logger,
//		})
//		if err != nil {
//			return err
//		}
//		d.onClose(func() error { table.Close(); return nil })
//		vault.New(table, nil).Register(mux)
//		return nil
//	}
//
// and add one line to the adapters list in mount.go:
//
//	var adapters = []func(mux *routes, d *deps) error{
//		mountVault,  // vault.go: Vault dialect
//		mountTFE,    // tfe.go: JSON:API dialect
//	}
//
// An adapter that runs background work stops it in a function it gives to
// d.onClose, which runs after the last request and before the store
// closes. Requests reach it authenticated (keel.PrincipalFrom) and logged.
// Patterns of different adapters must not overlap: http.ServeMux panics at
// start-up when one does.
package main
