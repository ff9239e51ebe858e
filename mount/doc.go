// Package mount is the composition root of keel's Vault-like service: the
// mount table (which secrets engine serves which path of a store, built,
// joined to the one lease manager, run and removed by the library), the
// lease manager, the password policies and the identity groups, over one
// store and one Authorizer, so that a program embedding keel wires a whole
// Vault-like service in a few lines and cannot wire it wrong.
//
// # Basics
//
// Open reads the table of a store and serves every mount in it; Enable,
// Disable and Tune change it; Route finds the engine of a request path:
//
//	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: authz, Defaults: mount.VaultDefaults()})
//	defer table.Close()
//	_, err = table.Enable(ctx, mount.EnableRequest{Path: "team-a/", Type: "kv",
//		Options: map[string]string{"leased_passthrough": "true"}})
//	m, rest, ok := table.Route("team-a/db") // m.KV serves rest ("db")
//
// The built-in types are "kv" (version 1; options "version" and
// "leased_passthrough"), "ldap" and "openldap" (package ldapengine); a
// program adds its own with Options.Types. Each mount gets its own part of
// the store, chosen by the table (see Store layout). Engines never share
// keys, and Close stops the engines' workers before the lease manager's.
//
// # Engines and their leases
//
// The table builds each mount's engine with its type's EngineType.Build,
// after it registered the mount with its one lease manager, and hands it an
// Env: the engine's guarded part of the store and the mount's lease handle
// (a lease.Issuer registered with that part and the mount's TTLs). That
// handle is the one seam between an engine and the lease manager, for every
// type alike: the engine issues its leases through it, in its own
// transactions when its records and their leases must commit together,
// ends them there (a library check-in), and names its Revoker with it.
// Until it does, the manager puts the mount's due leases off. No engine
// registers itself, and the manager refuses a second registration of a
// path, so a second engine cannot take over a mount's leases.
//
// # Store layout
//
// Open owns the keys of the store it is given; a program writes no
// prefix:
//
//	sys/mounts                     the mount table (JSON, one key)
//	sys/mount-guards/UUID          a mount's guard (see below)
//	kv/UUID/                       a kv mount's secrets
//	mounts/UUID/                   the data of a mount of another type
//	ldapengine/mounts/PATH/        an ldap or openldap mount's data, when
//	                               it was enabled before entries said
//	                               where their data is (Entry.Data)
//	ldapengine/password-policies/  the password policies (PasswordPolicies)
//	lease/                         the leases of every mount (Leases)
//	identity/                      the identity groups (Groups)
//
// # Rules
//
// A mount path is at most 256 bytes of segments made of ASCII
// letters, digits and "-", "_", ".", "+", "@", "~", separated by "/"; it
// holds no "..", no "." segment and no empty one, and does not start with
// "sys/", "auth/", "identity/" or "cubbyhole/". No mount may be at, above
// or below another (so "a/" and "a/b/" cannot both exist), nor at, above
// or below a path of Options.Reserved (what the program serves otherwise). A mount's lease
// TTLs must not be negative; its max TTL must not exceed the lease
// manager's system max, and its default TTL must not exceed its max TTL.
// Enable checks every rule, builds the engine, and only then writes the
// table, in one transaction: a refused Enable leaves the store as it was.
//
// # Errors
//
// Refused requests are of kind keel.KindInvalid with one problem per field
// (keel.FieldErrors; fields are the Go paths of EnableRequest and
// TuneRequest: "Path", "Type", "DefaultTTL", "MaxTTL", and an option by
// its key, Options["version"]). Missing
// rights are keel.KindForbidden: Enable needs keel.CapCreate on
// "sys/mounts/PATH", Disable keel.CapDelete on it, Tune keel.CapUpdate on
// "sys/mounts/PATH/tune", List and Get keel.CapRead on "sys/mounts" and
// "sys/mounts/PATH". Store errors keep their kinds.
//
// # Several tables on one store
//
// The stored table is the truth, not a table's memory of it: each Table
// watches the store's table key (storage.Watch) and follows what another
// Table changed on the same store, another process on one etcd or another
// Table of the same program, within a second (milliseconds when nothing
// is slow): it builds and serves the mounts enabled there, registering
// their leases with its lease manager, rebuilds the tuned ones, stops
// serving those being disabled and drops those removed. A lease worker
// that meets a due lease of a mount its table does not know yet puts it
// off for a second instead of counting a failure (see lease.Manager.Step).
//
// Every transaction of an engine first reads its mount's guard key (see
// storage.Guard), which Disable deletes before the mount's data: from then
// on an engine of that mount, whichever table built it and however long
// the program kept its *Mount, neither reads nor writes (keel.KindNotFound,
// "mount ... was disabled"), and a mount enabled again at the path has a
// new UUID and a new guard.
//
// # Removal
//
// Disable first marks the entry (the mount stops being served, and its
// path stays taken), revokes the mount's leases through its engine,
// deletes its guard key, deletes its data with storage.DeletePrefix in
// batches sized from the store's limits (so a mount of any size can be
// removed from etcd), then drops the entry. Each step can be repeated: a
// crash or an error leaves the entry marked, Disable again or the next
// Open finishes the removal.
//
// # Old and broken entries
//
// The table is stored as it was by the example server before this package
// existed, so its bbolt files open unchanged (Open adds the guard keys
// they lack). A stored entry that no longer
// validates (written by an older version, or by hand), or whose engine
// cannot be built, does not stop Open: List returns it with Mount.Err,
// Route does not serve it, every other mount is served, and Disable removes
// it.
//
// # After a restore
//
// A store restored from a copy (package snapshot) holds leases whose time
// passed while the copy sat on disk, and credentials its systems may no
// longer take. A program restores so: it writes the copy with
// mount.PrepareRestore as snapshot.RestoreOptions.Prepare (the leases are
// held before the copy's first key is written, so that no table serving
// the store revokes one), opens the table with lease.Options.Held (or
// follows the copy in a running one), calls MarkRestored (the lease hold
// is kept in the store, and every engine that is a Restorer checks its
// credentials again before serving them), checks what it needs, and
// releases the leases (lease.Manager.Release).
//
// # Concurrency
//
// A Table is safe for concurrent use; Enable, Disable and Tune run one at
// a time. Open starts one goroutine per ldap or openldap mount, one for
// the lease manager and one that follows the stored table; Close stops
// them and waits. After Close, Enable, Disable and Tune fail with
// keel.KindUnavailable.
//
// # Caveats
//
// A type must be known to every table that serves the store: a table that
// does not know a stored mount's type lists it with Mount.Err and does not
// serve it. A mount's engine runs in every process that opens the
// table, but its background work runs where Options.Leader says. Between
// the commit of a change by another table and the moment this one follows
// it, a request routed here to a mount just disabled fails as above; one
// routed to a mount just enabled is not found.
package mount
