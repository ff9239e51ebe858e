package mount_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkGuard: kv Write (overwrite) and Read of a 4-pair secret through
// the engine of the table's secret/ mount (impl=mount: guarded) and
// through a kv engine made with kv.New on a plain view of the
// same store, with the options the table gives its engine (impl=direct:
// never guarded), on memstore and on boltstore (default options: fsync on
// every commit). impl=alternating runs one mount op and one direct op per
// iteration, in turn first, and reports the time of each (mount-ns/op,
// direct-ns/op) and their ratio (mount/direct): the figure least moved by
// load on a shared machine.
func BenchmarkGuard(b *testing.B) {
	ctx := context.Background()
	secret := map[string]any{
		"username": "app-user",
		"password": "correct-horse-battery-staple",
		"url":      "postgres://db.internal:5432/app",
		"ttl":      "1h",
	}
	for _, kind := range []string{"memstore", "boltstore"} {
		b.Run("store="+kind, func(b *testing.B) {
			var s storage.Store
			if kind == "memstore" {
				m := memstore.New(nil)
				b.Cleanup(func() { m.Close() })
				s = m
			} else {
				bs, err := boltstore.Open(filepath.Join(b.TempDir(), "keel.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { bs.Close() })
				s = bs
			}
			table, err := mount.Open(ctx, s, &mount.Options{Authorizer: keel.AllowAll{}, Defaults: mount.VaultDefaults()[:1]})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { table.Close() })
			m, rest, ok := table.Route("secret/x")
			if !ok || m.KV == nil {
				b.Fatal("secret/ not routed to a kv engine")
			}
			direct, err := kv.New(storage.Sub(s, "direct/"), "secret", &kv.Options{Authorizer: keel.AllowAll{}, DefaultTTL: m.DefaultTTL})
			if err != nil {
				b.Fatal(err)
			}
			ops := map[string]func(*kv.Engine) error{
				"write": func(e *kv.Engine) error { return e.Write(ctx, rest, secret) },
				"read":  func(e *kv.Engine) error { _, err := e.Read(ctx, rest); return err },
			}
			engines := []struct {
				name string
				e    *kv.Engine
			}{{"mount", m.KV}, {"direct", direct}}
			for _, impl := range engines {
				if err := impl.e.Write(ctx, rest, secret); err != nil {
					b.Fatal(err)
				}
			}
			for _, op := range []string{"write", "read"} {
				fn := ops[op]
				for _, impl := range engines {
					b.Run("op="+op+"/impl="+impl.name, func(b *testing.B) {
						for b.Loop() {
							if err := fn(impl.e); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
				b.Run("op="+op+"/impl=alternating", func(b *testing.B) {
					var total [2]time.Duration
					n := 0
					for b.Loop() {
						for k := range 2 {
							i := (n + k) % 2
							start := time.Now()
							if err := fn(engines[i].e); err != nil {
								b.Fatal(err)
							}
							total[i] += time.Since(start)
						}
						n++
					}
					b.ReportMetric(float64(total[0])/float64(n), "mount-ns/op")
					b.ReportMetric(float64(total[1])/float64(n), "direct-ns/op")
					b.ReportMetric(float64(total[0])/float64(total[1]), "mount/direct")
				})
			}
		})
	}
}
