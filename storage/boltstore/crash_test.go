package boltstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// The crash-safety test runs the test binary again as a child process that
// commits Updates to one boltstore file from several goroutines and prints an
// acknowledgement line once each Update has returned. The parent kills the
// child with SIGKILL at a random moment, reopens the file and checks that
// every acknowledged write survived intact, that no value is corrupt, that
// the Updates of each writer survived as a prefix of its sequence (no holes,
// no half Update), and that bbolt's own consistency check passes. The same
// file is kept across kills, so data accumulates round after round.

const (
	envCrashChild = "KEEL_CRASH_CHILD" // path of the file; set only in the child
	envCrashRound = "KEEL_CRASH_ROUND" // round number, part of the child's keys
	envCrashSeed  = "KEEL_CRASH_SEED"  // seed of the parent (set it to replay a run)

	crashKills   = 24
	crashWriters = 4
)

// TestCrashChild is not a test: it is the entry point of the child process
// of TestCrashSafety, which runs the test binary with
// -test.run='^TestCrashChild$' and KEEL_CRASH_CHILD set to the file's path.
// Without that variable (a normal test run) it returns at once and passes.
// With it, it never returns: it writes until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(envCrashChild)
	if path == "" {
		return // not in a child of TestCrashSafety: nothing to do
	}
	round, err := strconv.Atoi(os.Getenv(envCrashRound))
	if err != nil {
		crashChildFail("bad %s: %v", envCrashRound, err)
	}
	seed, err := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	if err != nil {
		crashChildFail("bad %s: %v", envCrashSeed, err)
	}
	crashChild(path, round, seed)
}

func crashChildFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(3)
}

func crashChild(path string, round int, seed uint64) {
	// Never outlive the parent: its end of stdin closes when it exits,
	// however it exits. And never run for long in any case.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(4)
	}()
	time.AfterFunc(time.Minute, func() { crashChildFail("still running after a minute") })

	st, err := boltstore.Open(path, nil) // fsync on: the default
	if err != nil {
		crashChildFail("open: %v", err)
	}
	var outMu sync.Mutex
	ack := func(keys []string) {
		line := []byte("ack " + strings.Join(keys, " ") + "\n")
		outMu.Lock()
		defer outMu.Unlock()
		// os.Stdout is unbuffered: the line is in the pipe once Write
		// returns, and it is written only after the Update returned.
		if _, err := os.Stdout.Write(line); err != nil {
			crashChildFail("write ack: %v", err)
		}
	}
	ctx := context.Background()
	for g := range crashWriters {
		rng := rand.New(rand.NewPCG(seed, uint64(round)<<8|uint64(g)))
		go func() {
			for seq := 0; ; {
				n := 1
				if rng.IntN(3) == 0 {
					n = 2 + rng.IntN(2) // a multi-key Update of 2 or 3 keys
				}
				end := seq + n - 1
				keys := make([]string, 0, n)
				values := make([][]byte, 0, n)
				for s := seq; s <= end; s++ {
					k := crashKey(round, g, s)
					keys = append(keys, k)
					values = append(values, crashValue(k, s, end, rng.IntN(1500)))
				}
				// Sometimes also overwrite a hot key, so that pages
				// are freed and reused across commits.
				var hotValue []byte
				hot := fmt.Sprintf("hot/w%d", g)
				if rng.IntN(2) == 0 {
					hotValue = crashValue(hot, seq, seq, rng.IntN(3000))
				}
				err := st.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					for i, k := range keys {
						if err := tx.Put(k, values[i]); err != nil {
							return err
						}
					}
					if hotValue != nil {
						return tx.Put(hot, hotValue)
					}
					return nil
				})
				if err != nil {
					crashChildFail("update %v: %v", keys, err)
				}
				ack(keys)
				seq = end + 1
			}
		}()
	}
	select {} // the writers run until the parent kills the process
}

func crashKey(round, writer, seq int) string {
	return fmt.Sprintf("r%02d/w%d/%06d", round, writer, seq)
}

// crashValue is seq, the last seq of its Update, padLen bytes of padding,
// then the SHA-256 of the key and of all that.
func crashValue(key string, seq, end, padLen int) []byte {
	v := make([]byte, 0, 18+padLen+sha256.Size)
	v = binary.BigEndian.AppendUint64(v, uint64(seq))
	v = binary.BigEndian.AppendUint64(v, uint64(end))
	v = binary.BigEndian.AppendUint16(v, uint16(padLen))
	for i := range padLen {
		v = append(v, byte(seq+i))
	}
	h := sha256.New()
	h.Write([]byte(key))
	h.Write(v)
	return h.Sum(v)
}

// parseCrashValue checks v against key and returns its seq and end.
func parseCrashValue(key string, v []byte) (seq, end int, err error) {
	if len(v) < 18+sha256.Size {
		return 0, 0, fmt.Errorf("value of %d bytes is too short", len(v))
	}
	padLen := int(binary.BigEndian.Uint16(v[16:]))
	if len(v) != 18+padLen+sha256.Size {
		return 0, 0, fmt.Errorf("value of %d bytes, padding %d: wrong size", len(v), padLen)
	}
	body, sum := v[:18+padLen], v[18+padLen:]
	h := sha256.New()
	h.Write([]byte(key))
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), sum) {
		return 0, 0, errors.New("checksum mismatch")
	}
	return int(binary.BigEndian.Uint64(v)), int(binary.BigEndian.Uint64(v[8:])), nil
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts and kills 24 processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envCrashSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("bad %s: %v", envCrashSeed, err)
		}
	}
	t.Logf("seed %d (replay the kill delays with %s=%d)", seed, envCrashSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "crash.db")

	start := time.Now()
	acked := make(map[string]bool)
	total := 0
	for round := range crashKills {
		delay := time.Duration(20+rng.IntN(131)) * time.Millisecond
		keys := runCrashChild(t, path, round, seed, delay)
		for _, k := range keys {
			acked[k] = true
		}
		total += len(keys)
		checkCrashFile(t, path, acked)
		t.Logf("round %d: killed %v after the first ack; %d keys acknowledged (%d in all)", round, delay, len(keys), total)
	}
	t.Logf("%d kills in %v; %d acknowledged keys all survived", crashKills, time.Since(start).Round(time.Millisecond), total)
}

// runCrashChild starts a child writing to path, kills it delay after its
// first acknowledgement, and returns the keys it acknowledged.
func runCrashChild(t *testing.T, path string, round int, seed uint64, delay time.Duration) []string {
	t.Helper()
	// Our own pipes, not cmd.StdoutPipe: exec.Cmd.Wait would close that
	// one, possibly before the last acks are read.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		outW.Close()
		t.Fatal(err)
	}
	defer inW.Close() // the child exits on EOF of its stdin
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envCrashChild+"="+path,
		envCrashRound+"="+strconv.Itoa(round),
		envCrashSeed+"="+strconv.FormatUint(seed, 10),
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		t.Fatalf("start child: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	// Whatever happens to the test, no child survives it.
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	// Read acks until EOF, which comes once the child is dead. Only
	// complete lines count: one cut short by the kill is ignored.
	lines := make(chan []string, 64)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if err != io.EOF {
					readErr <- err
				}
				return
			}
			if rest, ok := strings.CutPrefix(line, "ack "); ok {
				select {
				case lines <- strings.Fields(rest):
				case <-stop:
					return
				}
			}
		}
	}()

	var keys []string
	var kill <-chan time.Time
	armed := false
	timeout := time.After(keeltest.WaitBound)
	for lines != nil {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			if !armed {
				kill, armed = time.After(delay), true // the crash the test simulates
			}
			keys = append(keys, l...)
		case <-kill:
			// An error means the child is already dead: the exit
			// code below tells why.
			cmd.Process.Kill()
			kill = nil
		case <-timeout:
			cmd.Process.Kill()
			<-exited
			t.Fatalf("round %d: no end of the child after %s; %d keys acknowledged; stderr:\n%s", round, keeltest.WaitBound, len(keys), stderr.Bytes())
		}
	}
	<-exited
	select {
	case err := <-readErr:
		t.Fatalf("round %d: read acks: %v", round, err)
	default:
	}
	if code := cmd.ProcessState.ExitCode(); code != -1 || len(keys) == 0 {
		t.Fatalf("round %d: child ended by itself (%v, exit code %d) with %d acks; stderr:\n%s", round, waitErr, code, len(keys), stderr.Bytes())
	}
	return keys
}

// checkCrashFile reopens the file after a kill and checks it.
func checkCrashFile(t *testing.T, path string, acked map[string]bool) {
	t.Helper()
	st, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	type writer struct {
		round, g int
	}
	seqs := make(map[writer][]int) // the seqs present, in order
	ends := make(map[writer]int)   // highest end of an Update present
	ctx := context.Background()
	err = st.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for k := range acked {
			v, err := tx.Get(k)
			if err != nil {
				t.Errorf("acknowledged key %s: %v", k, err)
				continue
			}
			if _, _, err := parseCrashValue(k, v); err != nil {
				t.Errorf("acknowledged key %s: %v", k, err)
			}
		}
		return tx.Scan("", storage.ScanOptions{}, func(k string, v []byte) error {
			seq, end, err := parseCrashValue(k, v)
			if err != nil {
				t.Errorf("key %s: corrupt value: %v", k, err)
				return nil
			}
			if strings.HasPrefix(k, "hot/") {
				return nil
			}
			var w writer
			var kseq int
			if _, err := fmt.Sscanf(k, "r%02d/w%d/%06d", &w.round, &w.g, &kseq); err != nil || kseq != seq || end < seq {
				t.Errorf("key %s: unexpected key or value (seq %d, end %d, %v)", k, seq, end, err)
				return nil
			}
			seqs[w] = append(seqs[w], seq)
			ends[w] = max(ends[w], end)
			return nil
		})
	})
	if err != nil {
		t.Errorf("view after kill: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// Each writer committed its Updates one after the other: what
	// survived must be its first Updates, whole (keys sort by seq).
	for w, ss := range seqs {
		for i, s := range ss {
			if s != i {
				t.Errorf("round %d writer %d: seq %d present, %d missing", w.round, w.g, s, i)
				break
			}
		}
		if ends[w] != len(ss)-1 {
			t.Errorf("round %d writer %d: part of an Update survived: seqs 0..%d present, an Update ends at %d", w.round, w.g, len(ss)-1, ends[w])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("bbolt open: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("bbolt view: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
}
