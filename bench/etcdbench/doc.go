// Package etcdbench holds benchmarks of keel's domain operations on etcd
// (storage/etcdstore over the test binary's etcd process, see etcdtest),
// each beside a yardstick: the raw etcd client (go.etcd.io/etcd/client/v3)
// sending the same requests in the same run, on the same server.
//
// The package has no code of its own: everything is in its tests. Four
// operations are measured:
//
//   - KVWrite: kv.Engine.Write overwriting a 4-pair secret (yardstick: a
//     Get of the key, then one Txn comparing its mod revision and putting
//     the same JSON);
//   - LeaseIssue: lease.Issuer.Issue of a lease with 46 bytes of data
//     (yardstick: one Txn putting a lease record and an expiry-index key);
//   - CheckOut: ldapengine.Engine.CheckOut of the one account of a library
//     set, with its lease (yardstick: Gets of the set, the engine's
//     restore mark, the account and the lease quotas, then one Txn
//     comparing them and putting the account and the lease's two keys); the
//     check-in after each check-out is not timed;
//   - MoveWorkspaces: project.Catalog.MoveWorkspaces of 10 workspaces
//     from one project to the other (yardstick: Gets of the 13 keys it
//     reads, then one Txn with their 13 comparisons, 22 puts and 10
//     deletes).
//
// Each benchmark has three parts: impl=keel, impl=clientv3, and
// impl=alternating, which runs one of each per iteration, in turn first,
// and reports the time of each (keel-ns/op, clientv3-ns/op) and their
// ratio: the figure that load on a shared machine disturbs least. Every
// ns/op is timed around the operations alone, without the untimed work
// between them (the check-ins). TestRequests checks that each yardstick
// sends what the keel operation needs: Gets of the same keys, the first
// linearizable, the others at its revision, then one Txn with as many
// comparisons, puts and deletes, of about as many bytes.
//
//	go test -run '^$' -bench . -benchtime 2s -count 3 ./bench/etcdbench/
//
// Figures and their reading: BENCHMARKS.md at the root of the module.
package etcdbench
