package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/etcdstore"
)

// snapshotCommand runs "snapshot save|restore [flags] FILE": it saves the
// store of -data (a bbolt file) or -etcd to FILE, or restores FILE into
// it. The store is read and written as it is held, sealed values sealed:
// no -seal-key-file is needed, and a restored store is opened with the
// seal keys of the one saved. A bbolt file is locked by a server that runs
// on it: stop the server first (with -etcd, the servers may run). A
// restore holds the copy's leases before it writes the copy's first key,
// and the next server started on it opens held and marks the engines
// (finishRestore).
func snapshotCommand(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || (args[0] != "save" && args[0] != "restore") {
		fmt.Fprintln(out, "usage: server snapshot save|restore [-data PATH | -etcd ENDPOINTS [-etcd-prefix P]] [-replace] FILE")
		return usageError{errors.New("snapshot: want save or restore")}
	}
	verb := args[0]
	fs := flag.NewFlagSet("snapshot "+verb, flag.ContinueOnError)
	fs.SetOutput(out)
	var src storeFlags
	src.add(fs)
	replace := fs.Bool("replace", false, "restore: replace the keys of a store that holds some (else refused)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{fmt.Errorf("snapshot %s: want one FILE", verb)}
	}
	file := fs.Arg(0)
	store, err := src.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if verb == "save" {
		// Written beside FILE, then renamed: a failed save leaves no
		// FILE that looks whole.
		tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		res, err := snapshot.Save(ctx, store, tmp, nil)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), file)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "saved %d keys (%d bytes) to %s\n", res.Keys, res.Bytes, file)
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := snapshot.Restore(ctx, f, store, &snapshot.RestoreOptions{Replace: *replace, Prepare: prepareRestore})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "restored %d keys from %s (%d deleted first)\n", res.Keys, file, res.Deleted)
	fmt.Fprintln(out, "the copy's leases are held: past their time, they are kept until DELETE /v1/sys/leases/hold")
	return nil
}

// restoredKey marks a store restored by "snapshot restore" that no server
// has opened since: the next server to start on it opens the mount table
// held and marks its engines (finishRestore). Its value is empty: a
// sealed server finds it by its key alone, as the command writes it
// without the seal keys.
const restoredKey = "server/restored"

// prepareRestore is what a restore writes before the copy's first key
// (snapshot.RestoreOptions.Prepare): the lease hold (mount.PrepareRestore),
// so that no server running on the store revokes a lease of the copy, and
// restoredKey. The hold is written as the store holds it: a sealed
// server's lease manager cannot open it, and revokes nothing either until
// finishRestore rewrites it.
func prepareRestore(ctx context.Context, tx storage.Tx) error {
	if err := mount.PrepareRestore(ctx, tx); err != nil {
		return err
	}
	return tx.Put(restoredKey, nil)
}

// restoredCopy reports whether store was restored by "snapshot restore"
// and no server has finished the restore yet.
func restoredCopy(ctx context.Context, store storage.Store) (bool, error) {
	found := false
	err := store.View(ctx, func(_ context.Context, tx storage.Tx) error {
		found = false
		return tx.Scan(restoredKey, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			found = found || key == restoredKey
			return nil
		})
	})
	return found, err
}

// finishRestore readies the table of a restored copy, opened held: it
// holds the leases in the store (sealed as the server writes) and marks
// the engines (mount.Table.MarkRestored), then drops restoredKey. A
// failure is logged, and restoredKey kept for the next start; the leases
// stay held either way until DELETE /v1/sys/leases/hold.
func finishRestore(ctx context.Context, table *mount.Table, store storage.Store, logger *slog.Logger) {
	err := table.MarkRestored(keel.WithPrincipal(ctx, rootPrincipal()))
	if err == nil {
		err = store.Update(ctx, func(_ context.Context, tx storage.Tx) error { return tx.Delete(restoredKey) })
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		logger.Error("a restored copy: marking its engines failed; the next start tries again", "error", err)
		return
	}
	logger.Warn("a restored copy: lease revocations are held until DELETE /v1/sys/leases/hold")
}

// keptOnRestore names the keys a restore through sys/storage/raft/snapshot
// leaves as they are: the running server's own identity and root token
// (state.go) and audit devices (audit.go), which it serves from memory.
func keptOnRestore(key string) bool {
	return key == stateKey || strings.HasPrefix(key, auditPrefix)
}

// migrateCommand runs "migrate -from STORE -to STORE": it copies every key
// of one store into another (snapshot.Migrate), printing its progress.
// A STORE is "bolt:PATH" or "etcd:ENDPOINTS" (comma-separated), with
// "#PREFIX" after it for another etcd prefix than keel/. Killed halfway, it
// is run again with the same arguments and goes on where it stopped.
func migrateCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(out)
	from := fs.String("from", "", "the `store` to copy: bolt:PATH or etcd:ENDPOINTS[#PREFIX]")
	to := fs.String("to", "", "the `store` to copy into, empty or holding an earlier run's keys")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *from == "" || *to == "" || fs.NArg() != 0 {
		fs.Usage()
		return usageError{errors.New("migrate: want -from and -to")}
	}
	src, err := openStoreURL(ctx, *from)
	if err != nil {
		return fmt.Errorf("-from: %w", err)
	}
	defer src.Close()
	dst, err := openStoreURL(ctx, *to)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	defer dst.Close()
	res, err := snapshot.Migrate(ctx, src, dst, &snapshot.MigrateOptions{Progress: func(p snapshot.Progress) {
		fmt.Fprintf(out, "%s\n", progressLine(p))
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "migrated %d keys (%d bytes); %d were there from an earlier run\n", res.Keys, res.Bytes, res.Resumed)
	return nil
}

// progressLine renders p as a bar and its figures.
func progressLine(p snapshot.Progress) string {
	done := p.Keys + p.Resumed
	const width = 30
	filled := width
	if p.Total > 0 {
		filled = int(min(done, p.Total) * width / p.Total)
	}
	return fmt.Sprintf("[%s%s] %d/%d keys, %.1f MiB, %.0f keys/s, %v left",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, p.Total,
		float64(p.Bytes)/(1<<20), p.KeysPerSecond, p.Left.Round(1e9))
}

// storeFlags are the flags that name a store, as the server's own.
type storeFlags struct {
	data, etcd, etcdPrefix string
}

func (s *storeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&s.data, "data", "keel.db", "the bbolt `file` of the store")
	fs.StringVar(&s.etcd, "etcd", "", "the store is on etcd at these comma-separated `endpoints`, instead of -data")
	fs.StringVar(&s.etcdPrefix, "etcd-prefix", etcdstore.DefaultPrefix, "with -etcd, the `prefix` of the deployment's keys")
}

// open opens the store the flags name, as held (no sealstore).
func (s *storeFlags) open(ctx context.Context) (storage.Store, error) {
	if s.etcd != "" {
		return etcdstore.Open(ctx, strings.Split(s.etcd, ","), &etcdstore.Options{Prefix: s.etcdPrefix})
	}
	if s.data == memoryData {
		return nil, errors.New("-data memory: a store in memory is gone with its process; nothing to save or restore")
	}
	return boltstore.Open(s.data, nil)
}

// openStoreURL opens "bolt:PATH" or "etcd:ENDPOINTS[#PREFIX]".
func openStoreURL(ctx context.Context, u string) (storage.Store, error) {
	kind, rest, ok := strings.Cut(u, ":")
	switch {
	case ok && kind == "bolt" && rest != "":
		return (&storeFlags{data: rest}).open(ctx)
	case ok && kind == "etcd" && rest != "":
		endpoints, prefix, _ := strings.Cut(rest, "#")
		if prefix == "" {
			prefix = etcdstore.DefaultPrefix
		}
		return (&storeFlags{etcd: endpoints, etcdPrefix: prefix}).open(ctx)
	}
	return nil, fmt.Errorf("%q: want bolt:PATH or etcd:ENDPOINTS[#PREFIX]", u)
}
