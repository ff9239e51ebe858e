// Package kv is the key-value secrets engine, version 1: it stores sets of
// key/value pairs at slash-separated paths of a mount, as Vault's kv v1
// (the "passthrough" backend) does, over a storage.Store.
//
// # Basics
//
// New mounts an Engine on a store of its own, usually a storage.Sub view
// of a shared store. Write stores pairs at a path, Read returns them, List
// names the children of a folder, Delete removes a path's pairs:
//
//	engine, err := kv.New(storage.Sub(root, "kv/secret/"), "secret", nil)
//	err = engine.Write(ctx, "app/db", map[string]any{"username": "app", "password": "s3cr3t", "ttl": "1h"})
//	db, err := engine.Read(ctx, "app/db") // db.Data["password"], db.LeaseDuration
//	top, _ := engine.List(ctx, "", keel.ListRequest{}) // top.Items: ["app/"]
//
// Pairs. A secret is a JSON object: string keys, and values of any JSON
// type (Vault keeps whatever the request body held, not only strings).
// Write stores the encoding/json encoding of data, and Read decodes it with
// json.Decoder.UseNumber, so that a number comes back as a json.Number with
// exactly the digits written ("12345678901234567890" loses nothing) and
// other values as string, bool, nil, []any and map[string]any. A Go value
// is stored as encoding/json encodes it: a struct becomes an object, a
// []byte a base64 string, invalid UTF-8 inside a string value U+FFFD.
// All pairs at a path are written and read together; a Write replaces
// every pair at the path, since version 1 has no merge and no history.
//
// Folders. A path "app/db" is stored at the key "app/db" of the engine's
// store, and its folders ("app/") exist only as prefixes of keys: they are
// never written, and vanish with their last secret. A path may be a secret
// and a folder at once ("app" and "app/db"); List then names it twice,
// "app" and "app/", as Vault does.
//
// Lease duration. The "ttl" key is advisory, as in Vault: a read reports
// it as Secret.LeaseDuration and no lease is created. It is read by
// keel.ParseDuration, as Vault's parseutil.ParseDurationSecond reads it: a
// whole number of seconds, as a number (3600) or a string ("3600"); a whole number of days
// ("7d"); or a Go duration string ("1h", "90m", "30s", "1h30m", "1.5h");
// null and "" mean zero. Without a "ttl" key, the "lease" key is read the
// same way (Vault's older name for it). Without either, or when the stored
// value cannot be parsed, a read reports the mount default
// (Options.DefaultTTL, else 768h).
//
// Leased mounts. With Options.Leases set (Vault's leased_passthrough: the
// mount's lease.Issuer, which package mount hands over), every Read issues
// a lease through it, for the path mount/path and the secret's lease
// duration (the mount default when that is zero), and returns its id. A
// lease does not protect or expire the secret; revoking it does nothing to
// the data, and renewing it answers the secret read anew. New names the
// engine's lease.Revoker with the Issuer, so that the engine and the lease
// manager meet in one way only.
//
// Paths. Secret paths (and the mount path given to New) are non-empty,
// valid UTF-8, and contain no empty segment: no leading or trailing "/",
// no "//". They contain no "." segment and no ".." anywhere, not even
// inside a segment ("a..b"): Vault's storage view refuses ".." with
// "relative paths not supported", and its HTTP layer never passes "."
// segments on. They contain no ASCII control character (U+0000 to U+001F,
// U+007F), which the lease manager refuses in lease paths too. Any other
// character is allowed. List also takes "" (or
// "/") for the top of the mount, and a folder with or without its trailing
// slash. Lengths are bounded only by the store's key limit.
//
// # Errors
//
// Every error wraps a keel kind; act on the kind (errors.Is, keel.KindOf):
//
//   - keel.KindInvalid: a malformed path (field "Path"; "Mount" in New),
//     empty data (field "Data", the rule "missing data fields", Vault's
//     message), a key that is not valid UTF-8 (field "Data"), a value
//     encoding/json cannot encode (field Data["key"]: a map entry is named
//     by its key in brackets, quoted as Go quotes strings). Fields are Go
//     paths of the arguments (see keel.FieldError). A "ttl" that is not a
//     duration, or a negative one, is stored as data, as Vault stores it;
//     a read then reports the mount default.
//   - keel.KindForbidden: the Authorizer refused (see Rights).
//   - keel.KindNotFound: Read of a path that holds no secret; List of a
//     folder with no children, which includes a path that holds a secret
//     and nothing below it (Vault answers 404 to both).
//   - keel.KindTooLarge: the path or the encoded secret exceeds the
//     store's limits (storage.Limits).
//   - the lease manager's error, with its kind, or keel.KindUnavailable
//     when it has none; keel.KindInternal when the value stored at a path
//     is not a JSON object (written past the engine).
//   - the store's kinds (keel.KindUnavailable for a closed store, and so
//     on), and keel.KindCanceled or KindDeadlineExceeded from ctx.
//
// Delete of a path that holds nothing succeeds, as Vault's does (204).
// A Write or Delete that fails leaves the store as it was.
//
// # Rights
//
// Each operation asks Options.Authorizer (nil: everything is allowed) for
// one capability on a resource named mount/path:
//
//	Read    keel.CapRead    secret/app/db
//	List    keel.CapList    secret/app/   (a trailing slash; "secret/" for the top)
//	Write   keel.CapCreate  secret/app/db, when nothing is stored there
//	Write   keel.CapUpdate  secret/app/db, when a secret is stored there
//	Delete  keel.CapDelete  secret/app/db
//
// Write reads the path and asks for create or update inside the very
// transaction that writes, so a caller allowed only to create can never
// overwrite a secret that another caller created meanwhile; the choice is
// made afresh each time the store runs the transaction. As in Vault, the
// right is checked before the data: a caller without it is refused even
// when its data is empty or malformed. Path syntax is checked first, since
// it names the resource. An error from the Authorizer that carries no kind
// is reported as keel.KindForbidden.
//
// Keys of a listing are not filtered by the caller's rights: whoever may
// list a folder sees every name in it, so names must not hold secrets.
//
// # Concurrency
//
// An Engine is safe for concurrent use; it keeps no state besides its
// configuration and relies on the store's transactions. Each operation is
// one transaction: a Read sees one snapshot, and concurrent Writes to a
// path leave one of them whole, never a mix. Closures given to the store
// may run more than once and read through the transaction all they decide
// on. A read's lease is issued after the read's transaction has ended.
//
// # Memory
//
// A read of a secret of keel.LargeValue bytes or more asks the keel.Reserver
// of its context, when it carries one, for twice the secret's stored size
// (Secret.JSON and Secret.Data are both returned) before it loads it, and
// fails with the Reserver's error, issuing no lease, when it is refused: a
// transport that bounds the memory of its requests keeps the bound for
// reads it did not see written. Over a store that cannot tell a value's
// size without loading it (etcd), the reservation comes right after the
// load.
//
// # Caveats
//
// The Authorizer is called inside Write's transaction, with the
// transaction's ctx: it must not start a transaction of the engine's own
// store with that ctx (the store answers storage.ErrNestedTx), and a slow
// Authorizer holds up the store's writers.
//
// As Vault, a leased read is renewable only when the secret has a "ttl" or
// "lease" key. Renewing and revoking those leases is the lease manager's business: it
// does not consult the engine, so a renewed lease does not re-read the
// secret as Vault's renew handler does.
//
// When the lease manager caps a lease's TTL (at its max TTL, 768h by
// default), Secret.LeaseDuration reports the capped TTL, as Vault does.
//
// encoding/json encodes a time.Duration as nanoseconds, which the "ttl"
// key then reads as seconds: write d.String() or whole seconds instead.
package kv
