package vault

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
)

// Snapshots serve sys/storage/raft/snapshot: a copy of a store, and its
// restore into the running server (see Options.Snapshots). A restore is
// not one transaction: requests served while it runs see the store in
// between, and one that fails midway leaves part of the copy written, its
// leases held (restore again). After it, the table serves the copy's
// mounts, and every component that reads the store at each request serves
// the copy; what a program keeps in memory from the store (its own
// identity, say) is its own to keep with Keep or reload.
type Snapshots struct {
	// Store is the store the mount table was opened on: a snapshot copies
	// every key of it (the other components' too, when they share it),
	// and a restore replaces them.
	Store storage.Store
	// Authorizer decides who may save and restore: keel.CapSudo on
	// "sys/storage/raft/snapshot", as Vault's root-only path.
	Authorizer keel.Authorizer
	// Keep names the keys a restore leaves as they are (the server's own
	// identity): see snapshot.RestoreOptions.Keep. Nil: none.
	Keep func(key string) bool
	// TempDir holds the temporary files of a save and of a restore.
	// Empty: os.TempDir().
	TempDir string
}

// The entries of a snapshot archive, in the order they are written: Vault's
// names, so that vault/api's RaftSnapshot, which checks that the last one
// is there and not empty, takes it.
const (
	snapMeta   = "meta.json"
	snapState  = "state.bin" // keel's snapshot stream (package snapshot)
	snapSums   = "SHA256SUMS"
	snapSealed = "SHA256SUMS.sealed" // the hex SHA-256 of SHA256SUMS: keel seals nothing here
	// snapFormat is meta.json's "keel_snapshot": the version of the archive.
	snapFormat = 1
	// maxSnapSmall bounds meta.json and the two sums entries.
	maxSnapSmall = 64 << 10
)

// snapMetaJSON is meta.json.
type snapMetaJSON struct {
	KeelSnapshot int    `json:"keel_snapshot"`
	Created      string `json:"created"`
	Keys         int64  `json:"keys"`
	Bytes        int64  `json:"bytes"`
}

// snapshotRoutes are sys/storage/raft/snapshot (GET saves, POST restores)
// and sys/storage/raft/snapshot-force (POST restores alike), when the
// Handler has Snapshots.
func (h *Handler) snapshotRoutes() []route {
	if h.snapshots == nil {
		return nil
	}
	const p = "/v1/sys/storage/raft/snapshot"
	return []route{
		{"GET", p, h.saveSnapshot},
		{"POST PUT", p, h.restoreSnapshot},
		{"POST PUT", p + "-force", h.restoreSnapshot},
	}
}

func (h *Handler) authorizeSnapshot(ctx context.Context) error {
	return keel.Authorize(ctx, h.snapshots.Authorizer, keel.CapSudo, "sys/storage/raft/snapshot")
}

// saveSnapshot writes the store's snapshot (snapshot.Save) into a
// temporary file, then answers the archive: gzip'd tar of meta.json, the
// stream as state.bin, SHA256SUMS and SHA256SUMS.sealed. A failure after
// the answer began aborts the connection, so that the client sees an
// archive without its last entry.
func (h *Handler) saveSnapshot(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := h.authorizeSnapshot(ctx); err != nil {
		writeError(w, err)
		return
	}
	f, err := os.CreateTemp(h.snapshots.TempDir, "keel-snapshot-*")
	if err != nil {
		writeError(w, fmt.Errorf("snapshot: temporary file: %v: %w", err, keel.KindUnavailable))
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	stateSum := sha256.New()
	res, err := snapshot.Save(ctx, h.snapshots.Store, io.MultiWriter(f, stateSum), nil)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	meta, _ := json.Marshal(snapMetaJSON{KeelSnapshot: snapFormat, Created: h.clock.Now().UTC().Format(time.RFC3339Nano), Keys: res.Keys, Bytes: res.Bytes})
	metaSum := sha256.Sum256(meta)
	sums := fmt.Sprintf("%x  %s\n%x  %s\n", metaSum, snapMeta, stateSum.Sum(nil), snapState)
	sealed := fmt.Sprintf("%x\n", sha256.Sum256([]byte(sums)))

	w.Header().Set("Content-Type", "application/gzip")
	w.WriteHeader(http.StatusOK)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := h.clock.Now()
	put := func(name string, size int64, body io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, body)
		return err
	}
	err = put(snapMeta, int64(len(meta)), bytes.NewReader(meta))
	if err == nil {
		err = put(snapState, res.Bytes, f)
	}
	if err == nil {
		err = put(snapSums, int64(len(sums)), strings.NewReader(sums))
	}
	if err == nil {
		err = put(snapSealed, int64(len(sealed)), strings.NewReader(sealed))
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		panic(http.ErrAbortHandler) // the archive is cut short: the client sees it
	}
}

// restoreSnapshot checks an archive made by saveSnapshot and restores its
// stream into the store, replacing every key but the kept ones: the leases
// held before the first key is written (mount.PrepareRestore), then the
// table brought in line and its engines marked (mount.Table.MarkRestored).
// An archive that is not whole, not keel's, or altered is refused with 400
// naming what is wrong, before anything is written.
func (h *Handler) restoreSnapshot(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := h.authorizeSnapshot(ctx); err != nil {
		writeError(w, err)
		return
	}
	f, err := os.CreateTemp(h.snapshots.TempDir, "keel-restore-*")
	if err != nil {
		writeError(w, fmt.Errorf("snapshot: temporary file: %v: %w", err, keel.KindUnavailable))
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := readArchive(r.Body, f); err != nil {
		writeError(w, err)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		writeError(w, fmt.Errorf("snapshot: temporary file: %v: %w", err, keel.KindUnavailable))
		return
	}
	_, err = snapshot.Restore(ctx, f, h.snapshots.Store, &snapshot.RestoreOptions{
		Replace: true, Keep: h.snapshots.Keep, Prepare: mount.PrepareRestore, TempDir: h.snapshots.TempDir})
	if err != nil {
		writeError(w, err)
		return
	}
	writeDone(w, h.mounts.MarkRestored(ctx))
}

// badArchive is the 400 answer to an archive that cannot be restored.
func badArchive(format string, args ...any) error {
	return &vaultError{http.StatusBadRequest, []string{"invalid snapshot: " + fmt.Sprintf(format, args...)}}
}

// readArchive reads a snapshot archive from body, writing its state.bin to
// state, and checks it whole: the four entries, keel's meta.json, and
// every sum.
func readArchive(body io.Reader, state io.Writer) error {
	gz, err := gzip.NewReader(bufio.NewReader(body))
	if err != nil {
		return badArchive("not a gzip'd archive: %v", err)
	}
	tr := tar.NewReader(gz)
	small := map[string][]byte{}
	var stateSum hash.Hash
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return badArchive("the archive is cut short or corrupt: %v", err)
		}
		seen := small[hd.Name] != nil || (hd.Name == snapState && stateSum != nil)
		switch {
		case seen:
			return badArchive("the archive holds %s twice", hd.Name)
		case hd.Name == snapState:
			stateSum = sha256.New()
			if _, err := io.Copy(io.MultiWriter(spool{state}, stateSum), tr); err != nil {
				if keel.KindOf(err) == keel.KindUnavailable {
					return err // the temporary file, not the archive
				}
				return badArchive("%s is cut short or corrupt: %v", snapState, err)
			}
		case hd.Name == snapMeta || hd.Name == snapSums || hd.Name == snapSealed:
			b, err := io.ReadAll(io.LimitReader(tr, maxSnapSmall+1))
			if err != nil {
				return badArchive("%s is cut short or corrupt: %v", hd.Name, err)
			}
			if len(b) > maxSnapSmall {
				return badArchive("%s is larger than %d bytes", hd.Name, maxSnapSmall)
			}
			small[hd.Name] = b
		default:
			return badArchive("unknown entry %q: not a keel snapshot", hd.Name)
		}
	}
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return badArchive("the archive is cut short or corrupt: %v", err)
	}
	for _, name := range []string{snapMeta, snapSums, snapSealed} {
		if small[name] == nil {
			return badArchive("no %s: the archive is not whole", name)
		}
	}
	if stateSum == nil {
		return badArchive("no %s: the archive is not whole", snapState)
	}
	var meta snapMetaJSON
	if err := json.Unmarshal(small[snapMeta], &meta); err != nil || meta.KeelSnapshot == 0 {
		return badArchive("%s is not keel's: a Vault raft snapshot cannot be restored into keel", snapMeta)
	}
	if meta.KeelSnapshot != snapFormat {
		return badArchive("keel snapshot archive version %d; this server reads version %d", meta.KeelSnapshot, snapFormat)
	}
	if got := fmt.Sprintf("%x\n", sha256.Sum256(small[snapSums])); got != string(small[snapSealed]) {
		return badArchive("%s does not match %s", snapSealed, snapSums)
	}
	want := map[string]string{snapMeta: fmt.Sprintf("%x", sha256.Sum256(small[snapMeta])), snapState: hex.EncodeToString(stateSum.Sum(nil))}
	lines := strings.Split(strings.TrimSuffix(string(small[snapSums]), "\n"), "\n")
	if len(lines) != len(want) {
		return badArchive("%s lists %d entries, want %d", snapSums, len(lines), len(want))
	}
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		w, known := want[name]
		if !ok || !known {
			return badArchive("%s: unexpected line %q", snapSums, line)
		}
		if sum != w {
			return badArchive("the SHA-256 of %s is %s, %s says %s: the archive was altered", name, w, snapSums, sum)
		}
		delete(want, name)
	}
	return nil
}

// spool marks the errors of the temporary file, so that a full disk is not
// taken for a corrupt archive.
type spool struct{ w io.Writer }

func (s spool) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("snapshot: temporary file: %v: %w", err, keel.KindUnavailable)
	}
	return n, nil
}
