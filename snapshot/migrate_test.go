package snapshot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

// progressLog records the calls of a Progress callback and checks them:
// one before the first batch, then one per batch, counts growing, the
// total known.
type progressLog struct {
	calls []snapshot.Progress
}

func (l *progressLog) record(p snapshot.Progress) { l.calls = append(l.calls, p) }

func (l *progressLog) check(t *testing.T, total, keys, bytes int64, batches int) {
	t.Helper()
	if len(l.calls) != batches+1 {
		t.Errorf("%d progress calls, want %d (one before the first batch, one per batch)", len(l.calls), batches+1)
	}
	for i, p := range l.calls {
		if p.Total != total {
			t.Errorf("call %d: total %d, want %d", i, p.Total, total)
		}
		if i == 0 && p.Keys != 0 {
			t.Errorf("first call: %d keys, want 0", p.Keys)
		}
		if i > 0 && (p.Keys <= l.calls[i-1].Keys || p.Bytes <= l.calls[i-1].Bytes || p.KeysPerSecond <= 0) {
			t.Errorf("call %d: %+v after %+v: not progressing", i, p, l.calls[i-1])
		}
		if i > 0 && i < len(l.calls)-1 && p.Left <= 0 {
			t.Errorf("call %d: no estimate of the time left: %+v", i, p)
		}
	}
	last := l.calls[len(l.calls)-1]
	if last.Keys != keys || last.Bytes != bytes || last.Left != 0 {
		t.Errorf("last call %+v, want %d keys, %d bytes, nothing left", last, keys, bytes)
	}
}

func size(kvs []kv) (n int64) {
	for _, e := range kvs {
		n += int64(len(e.key) + len(e.value))
	}
	return n
}

// TestMigrateMemoryToBolt: every key is copied, in batches of at most
// 1,000 keys, with a progress call per batch.
func TestMigrateMemoryToBolt(t *testing.T) {
	from := everystore.Mem(t)
	want := sample(2500, "k/")
	put(t, from, want)
	to := everystore.Bolt(t)
	var log progressLog
	res, err := snapshot.Migrate(context.Background(), from, to, &snapshot.MigrateOptions{Progress: log.record})
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys != 2500 || res.Bytes != size(want) || res.Resumed != 0 {
		t.Errorf("result %+v", res)
	}
	log.check(t, 2500, 2500, size(want), 3)
	equal(t, dump(t, to), want)
}

// TestMigrateBoltToEtcd: the batches are sized from etcd's limits (128
// operations a transaction).
func TestMigrateBoltToEtcd(t *testing.T) {
	to := everystore.Etcd(t)
	from := everystore.Bolt(t)
	want := sample(300, "k/")
	put(t, from, want)
	var log progressLog
	if _, err := snapshot.Migrate(context.Background(), from, to, &snapshot.MigrateOptions{Progress: log.record}); err != nil {
		t.Fatal(err)
	}
	log.check(t, 300, 300, size(want), 3) // 128 + 128 + 44
	equal(t, dump(t, to), want)
}

// TestMigrateResumes: a Migrate interrupted after some batches (its ctx
// canceled, or a commit failing) and run again continues after the last
// key copied, and finishes with an identical copy.
func TestMigrateResumes(t *testing.T) {
	want := sample(3500, "k/")
	for _, how := range []string{"canceled", "commit failed"} {
		t.Run(how, func(t *testing.T) {
			from := everystore.Mem(t)
			put(t, from, want)
			bolt := everystore.Bolt(t)
			to := faultstore.New(bolt)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			batches := 0
			first, err := snapshot.Migrate(ctx, from, to, &snapshot.MigrateOptions{Progress: func(p snapshot.Progress) {
				if p.Keys == 0 {
					return
				}
				if batches++; batches == 2 {
					if how == "canceled" {
						cancel()
					} else {
						to.Fail(faultstore.OpCommit, "", 1, errDisk)
					}
				}
			}})
			if how == "canceled" && !errors.Is(err, context.Canceled) || how != "canceled" && !errors.Is(err, errDisk) {
				t.Fatalf("first run: %v", err)
			}
			if first.Keys != 2000 || len(dump(t, bolt)) != 2000 {
				t.Fatalf("first run copied %d keys, the store holds %d, want 2000", first.Keys, len(dump(t, bolt)))
			}
			var log progressLog
			res, err := snapshot.Migrate(context.Background(), from, to, &snapshot.MigrateOptions{Progress: log.record})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resumed != 2000 || res.Keys != 1500 {
				t.Errorf("second run %+v, want 2000 resumed and 1500 copied", res)
			}
			if log.calls[0].Resumed != 2000 {
				t.Errorf("progress %+v, want 2000 resumed", log.calls[0])
			}
			log.check(t, 3500, 1500, size(want[2000:]), 2)
			equal(t, dump(t, bolt), want)
		})
	}
}

// TestMigrateRefusesForeignDestination: a destination whose greatest key
// the source does not hold with the same value is refused with
// keel.KindConflict, and nothing is written.
func TestMigrateRefusesForeignDestination(t *testing.T) {
	from := memstore.New(nil)
	defer from.Close()
	put(t, from, sample(10, "k/"))
	for _, foreign := range []kv{{"k/99999", "x"}, {"k/00005", "not the source's"}} {
		to := memstore.New(nil)
		defer to.Close()
		put(t, to, []kv{foreign})
		_, err := snapshot.Migrate(context.Background(), from, to, nil)
		if keel.KindOf(err) != keel.KindConflict {
			t.Errorf("%q: %v, want kind conflict", foreign.key, err)
		}
		equal(t, dump(t, to), []kv{foreign})
	}
	// Another prefix of the destination is not looked at.
	to := memstore.New(nil)
	defer to.Close()
	put(t, to, []kv{{"z", "other"}})
	if _, err := snapshot.Migrate(context.Background(), from, to, &snapshot.MigrateOptions{Prefix: "k/"}); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, to); len(got) != 11 {
		t.Errorf("%d keys, want 11", len(got))
	}
}
