package snapshot_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

var benchKeys = flag.Int("snapshot.keys", 100_000, "keys of the bbolt file BenchmarkSave saves")

// BenchmarkSave compares, on one bbolt file of -snapshot.keys keys (100-byte
// values), in one run:
//
//   - engine=snapshot: Save of the boltstore to io.Discard;
//   - engine=bbolt-cursor: go.etcd.io/bbolt directly, one read transaction
//     walking the store's bucket with a cursor and writing each key and
//     value, length-prefixed, through a bufio.Writer to io.Discard (the
//     stream without its checksum);
//   - engine=bbolt-writeto: bbolt's Tx.WriteTo, the file's pages as they
//     are (a backup of the file, not of its keys);
//   - engine=paired: each iteration runs a Save and then the cursor walk
//     (of a copy of the file: the store holds the file's lock), and reports the ratios of their summed wall and CPU times
//     (wall-ratio, cpu-ratio), so that on a busy machine each Save is
//     compared with a walk run right after it, under the same load.
//
// See BENCHMARKS.md at the root of the module for figures.
func BenchmarkSave(b *testing.B) {
	n := *benchKeys
	path := filepath.Join(b.TempDir(), "keel.db")
	fillBolt(b, path, n)
	b.Run("engine=snapshot", func(b *testing.B) {
		s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var bytes int64
		cpu0 := keeltest.CPUTime()
		for b.Loop() {
			res, err := snapshot.Save(context.Background(), s, io.Discard, nil)
			if err != nil || res.Keys != int64(n) {
				b.Fatal(res, err)
			}
			bytes = res.Bytes
		}
		report(b, cpu0, n, bytes)
	})
	b.Run("engine=bbolt-cursor", func(b *testing.B) {
		db := openBolt(b, path)
		var bytes int64
		cpu0 := keeltest.CPUTime()
		for b.Loop() {
			bytes = cursorWalk(b, db)
		}
		report(b, cpu0, n, bytes)
	})
	b.Run("engine=paired", func(b *testing.B) {
		s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		// The store holds the file's lock: the walk reads a copy.
		db := openBolt(b, copyFile(b, path))
		var saveWall, saveCPU, walkWall, walkCPU time.Duration
		for b.Loop() {
			t0, c0 := time.Now(), keeltest.CPUTime()
			if res, err := snapshot.Save(context.Background(), s, io.Discard, nil); err != nil || res.Keys != int64(n) {
				b.Fatal(res, err)
			}
			t1, c1 := time.Now(), keeltest.CPUTime()
			cursorWalk(b, db)
			saveWall, saveCPU = saveWall+t1.Sub(t0), saveCPU+c1-c0
			walkWall, walkCPU = walkWall+time.Since(t1), walkCPU+keeltest.CPUTime()-c1
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
		b.ReportMetric(ms(saveWall), "save-ms/op")
		b.ReportMetric(ms(saveCPU), "save-cpu-ms/op")
		b.ReportMetric(ms(walkWall), "walk-ms/op")
		b.ReportMetric(ms(walkCPU), "walk-cpu-ms/op")
		b.ReportMetric(float64(saveWall)/float64(walkWall), "wall-ratio")
		b.ReportMetric(float64(saveCPU)/float64(walkCPU), "cpu-ratio")
	})
	b.Run("engine=bbolt-writeto", func(b *testing.B) {
		db := openBolt(b, path)
		var bytes int64
		cpu0 := keeltest.CPUTime()
		for b.Loop() {
			err := db.View(func(tx *bolt.Tx) error {
				var err error
				bytes, err = tx.WriteTo(io.Discard)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0, n, bytes)
	})
}

// report reports the rates of b, and the CPU time an operation took
// since cpu0 (the process's, garbage collection included).
func report(b *testing.B, cpu0 time.Duration, keys int, bytes int64) {
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(keeltest.CPUTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(keys)/per, "keys/s")
	b.ReportMetric(float64(bytes)/per/(1<<20), "MiB/s")
	b.ReportMetric(float64(bytes)/(1<<20), "MiB")
}

// fillBolt writes n keys with 100-byte values into a boltstore at path.
func fillBolt(b *testing.B, path string, n int) {
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := make([]byte, 100)
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for j := i; j < min(i+1000, n); j++ {
				if err := tx.Put(fmt.Sprintf("service/%03d/key/%08d", j%100, j), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("filled %d keys in %s", n, time.Since(start).Round(time.Millisecond))
}

// cursorWalk is the yardstick: one read transaction of db walking the
// store's bucket with a cursor, writing each key and value length-prefixed
// through a bufio.Writer to io.Discard. It returns the bytes written.
func cursorWalk(b *testing.B, db *bolt.DB) (bytes int64) {
	err := db.View(func(tx *bolt.Tx) error {
		w := bufio.NewWriterSize(io.Discard, 64<<10)
		c := tx.Bucket([]byte("keel")).Cursor()
		var lens [8]byte
		for k, v := c.First(); k != nil; k, v = c.Next() {
			w.Write(lens[:2])
			w.Write(k)
			w.Write(lens[:2])
			w.Write(v)
			bytes += int64(len(k) + len(v) + 4)
		}
		return w.Flush()
	})
	if err != nil {
		b.Fatal(err)
	}
	return bytes
}

// copyFile copies the file at path beside it and returns the copy's path.
func copyFile(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cp := path + ".copy"
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return cp
}

func openBolt(b *testing.B, path string) *bolt.DB {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkRestore measures, on -snapshot.keys keys as BenchmarkSave's,
// in one run: Restore of a saved stream (held in memory) into a fresh
// boltstore without fsync (engine=restore), and Migrate of the bbolt file
// into another (engine=migrate); each iteration writes into a new file.
func BenchmarkRestore(b *testing.B) {
	n := *benchKeys
	dir := b.TempDir()
	path := filepath.Join(dir, "keel.db")
	fillBolt(b, path, n)
	src, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	var stream bytes.Buffer
	if _, err := snapshot.Save(context.Background(), src, &stream, nil); err != nil {
		b.Fatal(err)
	}
	i := 0
	fresh := func(b *testing.B) storage.Store {
		i++
		s, err := boltstore.Open(filepath.Join(dir, fmt.Sprintf("copy-%d.db", i)), &boltstore.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	b.Run("engine=restore", func(b *testing.B) {
		cpu0 := keeltest.CPUTime()
		for b.Loop() {
			res, err := snapshot.Restore(context.Background(), bytes.NewReader(stream.Bytes()), fresh(b), nil)
			if err != nil || res.Keys != int64(n) {
				b.Fatal(res, err)
			}
		}
		report(b, cpu0, n, int64(stream.Len()))
	})
	b.Run("engine=migrate", func(b *testing.B) {
		cpu0 := keeltest.CPUTime()
		var moved int64
		for b.Loop() {
			res, err := snapshot.Migrate(context.Background(), src, fresh(b), nil)
			if err != nil || res.Keys != int64(n) {
				b.Fatal(res, err)
			}
			moved = res.Bytes
		}
		report(b, cpu0, n, moved)
	})
}
