// Package telemetry measures and traces keel's operations with
// OpenTelemetry: a Telemetry is a keel.Observer (give it to mount.Options,
// kv.Options or lease.Options, alone or with keel.Observers) that records
// the duration of every operation in one histogram, by operation and
// outcome, and starts a span for each; WatchLeases adds gauges of the
// lease counts.
//
// The program owns the providers: keel makes no global one and reads
// none. An exporter of the program's choice (Prometheus, OTLP) reads what
// the providers gather; the example server serves the Prometheus text
// format at Vault's path /v1/sys/metrics.
//
// LogTo is the Observer of a log/slog logger: a line per operation, at a
// level that follows its outcome, without its data.
//
// # Names
//
// Where Vault has the same metric keel uses its name: the live and
// irrevocable lease counts are vault.expire.num_leases and
// vault.expire.num_irrevocable_leases (vault_expire_num_leases in
// Prometheus). keel's own are keel.operation.duration (seconds; the
// attributes "operation", as "kv.Write", and "outcome": "ok", or the
// keel.Kind of the error, as "not_found") and keel.lease.due. The revocations of the lease
// worker are the operation "lease.Expire": their successes and failures are
// its count by outcome.
//
// # Cost
//
// A measurement reuses one attribute set per operation and outcome, made
// the first time they meet. The lease gauges count the lease manager's
// keys at each collection (lease.Manager.Count): a scrape costs in
// proportion to the leases stored.
package telemetry
