// Package keel is the root of an embeddable Go library of secrets and
// governance services: organization policies and projects, cluster peering,
// identity groups, leases, a key-value secrets engine, and directory (LDAP)
// secrets engines. Each service is a package of typed operations over a
// transactional storage.Store; HTTP adapters that speak the wire formats of
// the systems they imitate live under examples/.
//
// This package holds only what every service shares, and imports none of
// them: the kinds of error, the caller and its rights, and the clock.
//
// # Packages
//
//	keel                      error kinds, Principal and Authorizer, Clock
//	storage                   the Store and Tx contract, prefix views (Sub)
//	storage/memstore          ordered in-memory store with snapshot reads
//	storage/boltstore         one bbolt file, fsync on commit, grouped commits
//	storage/sealstore         AES-256-GCM sealing of values at rest, key rotation
//	storage/etcdstore         a store on etcd, for several processes
//	storage/faultstore        makes chosen operations fail, for tests
//	storage/storagetest       the conformance suite every store passes
//	leader                    leadership of background work (one process, or etcd)
//	mount                     the mount table: engines by path, one lease manager, removal
//	project                   organizations, projects, workspaces, teams
//	policy                    policy-as-code policies per organization
//	peering                   cluster peering between keel clusters
//	ldapengine                the ldap and openldap directory engines: static and dynamic
//	                          roles, library sets
//	ldapengine/ldaptest       an in-memory directory for tests of ldapengine
//	passwordpolicy            Vault's password policies: HCL parser, generation, storage
//	kv                        the key-value secrets engine, version 1
//	lease                     the lease manager and its expiry worker
//	identity                  identity groups, their members and parents
//	audit                     audit devices: Vault's records, salted, hash-chained files
//	snapshot                  save, restore and migrate a store
//	ratelimit                 rate-limit quotas on request paths, per client
//	telemetry                 OpenTelemetry metrics and traces, and logs, of every operation
//	examples/httpapi/vault    the Vault-dialect HTTP adapter
//	examples/httpapi/tfe      the JSON:API (HCP Terraform) HTTP adapter
//	examples/httpapi/consul   the Consul-dialect HTTP adapter (peering)
//	examples/server           an HTTP server over a bbolt file
//
// Composition is the library's too: package mount builds the engines of a
// store's mount table, joins them to one lease manager (lease issuing goes
// through a typed lease.Issuer that checks it joins the right store) and
// runs and removes them, so a program embedding keel does not rebuild it.
//
// # Quickstart
//
//	store, err := boltstore.Open(path, nil) // one file; fsync on every commit
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	ctx = keel.WithPrincipal(ctx, keel.Principal{ID: "alice"})
//	err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
//		return tx.Put("greeting", []byte("hello")) // all writes of the closure commit, or none
//	})
//
// (from Example_quickstart, which also refuses to overwrite the key).
//
// # Errors
//
// Every error returned by a keel package wraps one Kind. Act on the kind,
// never on the message: errors.Is(err, keel.KindNotFound), or switch on
// KindOf(err). A request that breaks rules fails with a *ValidationError
// that lists every broken rule with the field it concerns (FieldErrors), so
// that an adapter can answer all of them at once. Fields are named by their
// Go path in the operation's input ("Enforce[0].Mode", "LeaseID"), never by
// a wire name: each adapter translates them in one table (see FieldError).
//
// # Rights
//
// The caller travels in the context (WithPrincipal). Each operation asks the
// Authorizer of its service for the Capability the operation needs on a
// resource path. Without one, everything is allowed (AllowAll);
// RuleAuthorizer grants capabilities from named policies of path globs.
//
// # Observing
//
// Every operation a service is told to report goes through one seam: the
// service calls Begin with its Observer before the operation acts, and the
// Op's End when it returns, with the caller, the resource, the outcome,
// the duration and the request and result. Audit devices, metrics, traces
// and logs are Observers; Observers joins several, and a program adds its
// own. An Observer may refuse an operation (an audit device that cannot
// record it): the operation then fails with that error and acts on
// nothing. The domain that owns a value marks its secret fields with the
// struct tag `keel:"secret"`; a consumer shows them only through Redact.
// Without an Observer the seam costs a nil check.
//
// # Time
//
// Services read time only from the Clock given to them. FakeClock moves only
// when told to, so that tests of expiry and rotation are exact and never
// sleep.
package keel
