// Package audit records who did what, in the shape of Vault's audit log,
// so that a log can be searched for a secret without holding it, and shows
// when it was tampered with.
//
// A Record is a request record (written before an operation acts) or a
// response record (after). A Broker sends each record to every enabled
// Device, salted with that device's Salt: the secret strings (the client
// token and accessor, and every string of the request's and response's
// data) are replaced by their HMAC-SHA256 under the salt, written as Vault
// writes them ("hmac-sha256:…"); Broker.Hash gives the hash of a value, as
// Vault's sys/audit-hash does. The salt is the device's to keep (a program
// keeps it in its sealed store, so that hashes stay comparable across
// restarts).
//
// # Fail closed, never hang
//
// Broker.Record returns an error of kind keel.KindUnavailable when devices
// are enabled and none wrote the record: the caller refuses the operation,
// as Vault does. A device that does not answer within Options.Timeout (1 s
// by default) is given up on for that record, and records that find its
// write still blocked skip it at once: a hung device costs each operation
// at most the timeout, and never holds it. The write goes on in the
// background until the device answers.
//
// # Cost
//
// A record is salted and encoded by Record's caller, in one pass without
// reflection (data given as raw JSON, Request.RawData, is hashed where it
// lies, without a map), and only chained and written by the File's
// writer goroutine, kept from burst to burst until Close, which lets the
// goroutines ready to run go first, so that under load one write(2)
// takes the records of many requests. The timeout costs a record no
// timer: one watchdog goroutine per Broker, running while Records wait,
// sleeps until the earliest deadline and gives up on the Records past
// theirs. The caller still waits for the writer twice a request (the
// request record before the operation acts, the response record before
// the answer): writing in the caller would save that hand-off, but a
// caller blocked in write(2) could not be freed within the timeout. The members "auth"
// and "request" that a request record encoded are kept in its Request
// and written again in its response record, which is why a Request must
// not change once recorded. BENCHMARKS.md has the figures.
//
// # Devices kept in a store
//
// A Table keeps a Broker's devices in a storage.Store, in the fields of
// Vault's sys/audit (type, description, options, local) with each
// device's salt, one key per device path: the devices, and the hashes of
// their records, outlive a restart. A Table watches its keys, so that a
// device enabled or disabled by another process on the same store (two
// servers on one etcd), or by a restore, is enabled or disabled in this
// one soon after; a process that cannot open a kept device's file logs it
// and lists it, not enabled, so that it still starts and an operator can
// disable it. "file" is the one device type, with the options file_path
// (a file: Vault's stdout and discard are not offered) and mode.
//
// # Operations of the library
//
// Broker.Observer makes the Broker a consumer of keel's instrumentation
// seam (keel.Observer): given to a composition root (mount.Options,
// governance.Options, peering.Options) or to one service, it records each
// operation of the library as a request and a response record, and
// refuses an operation it cannot record. The example server records the
// HTTP requests instead, in Vault's terms.
//
// # Tamper evidence
//
// File, the file device, appends one JSON object per line, and chains each
// record to the one before it: Record.Chain carries the record's sequence
// number (from 1, across files) and the SHA-256 of the previous record's
// line. Verify reads a log and reports the first line where the chain
// breaks: an edited, removed, reordered or cut record. The chain is not
// keyed: it shows edits made by hand or by a tool that does not rewrite
// every later line; a program that must resist a writer who does keeps the
// last hash (File.Last) elsewhere, and compares.
//
// A File notices that its path names another file (rotated by logrotate,
// or deleted) at the next write, and opens the path again; Reopen does it
// at once (the example server calls it on SIGHUP). The chain goes on in
// the new file, so that the files of a rotation, joined in order, verify
// as one log. A write that fails cuts the file back to its last whole
// record.
package audit
