package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/keelhq/keel"
)

// File is a device that appends records to a file, one JSON object per
// line, each chained to the one before it (Record.Chain), across the
// files it writes when the file is rotated. It is safe for concurrent use:
// records are written one at a time, in the order of Write calls.
type File struct {
	path  string
	mode  os.FileMode
	clock keel.Clock

	mu     sync.Mutex
	f      *os.File
	info   os.FileInfo // of f, to notice that path names another file
	size   int64       // of f after the last whole record
	seq    uint64      // of the last record written
	last   string      // hash of the last record's line
	closed bool
	buf    []byte // Write's encoding of a record, kept for the next
	batch  []byte // the writer's lines, kept for the next
	sha    hash.Hash
	sum    [sha256.Size]byte
	q      queue // records from the Broker
	// checked is when path was last found to name the open file: it is
	// compared again at most once per followEvery, so that a record costs
	// no stat.
	checked time.Time
}

// followEvery is how often a File checks that its path still names the
// file it writes.
const followEvery = time.Second

// FileOptions configure a File. A nil *FileOptions means the defaults.
type FileOptions struct {
	// Mode is the permission of a file the device creates. Zero: 0600.
	Mode os.FileMode
	// Clock times the checks that the path still names the file. Nil:
	// keel.SystemClock{}.
	Clock keel.Clock
}

// OpenFile opens the file device at path, creating the file if needed.
// Records are appended: the chain continues from the last record of an
// existing file. A file that ends within a record (a write cut short, or
// a file truncated) is refused with keel.KindInvalid: verify it (Verify)
// and move it aside.
func OpenFile(path string, opts *FileOptions) (*File, error) {
	var o FileOptions
	if opts != nil {
		o = *opts
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	d := &File{path: path, mode: o.Mode, clock: keel.ClockOrSystem(o.Clock), sha: sha256.New()}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the path the device writes to.
func (d *File) Path() string { return d.path }

// Last returns the Seq and the line hash of the last record written (or
// read at open): what Verify's result must end with when no record was
// removed from the end of the log.
func (d *File) Last() (seq uint64, hash string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq, d.last
}

// open opens d.path for appending and reads the chain's state from its
// last record. Called with d.mu held, or before d is shared.
func (d *File) open() error {
	f, err := os.OpenFile(d.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, d.mode)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", d.path, unavailable(err))
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: open %s: %w", d.path, unavailable(err))
	}
	seq, last, err := lastRecord(f, info.Size())
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: open %s: %w", d.path, err)
	}
	if seq == 0 && info.Size() == 0 {
		// A new file after a rotation continues the chain of the one
		// before it.
		seq, last = d.seq, d.last
	}
	d.f, d.info, d.size, d.seq, d.last = f, info, info.Size(), seq, last
	return nil
}

// lastRecord returns the chain's state after the last record of f, whose
// size is size: its Seq and its line's hash; zero values for an empty file.
func lastRecord(f *os.File, size int64) (uint64, string, error) {
	if size == 0 {
		return 0, "", nil
	}
	// Read back from the end until the line before the last is found.
	const block = 64 << 10
	var tail []byte
	for off := size; ; {
		n := min(int64(block), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil {
			return 0, "", unavailable(err)
		}
		tail = append(buf, tail...)
		if tail[len(tail)-1] != '\n' {
			return 0, "", fmt.Errorf("the file ends within a record (truncated, or a write cut short): %w", keel.KindInvalid)
		}
		if i := bytes.LastIndexByte(tail[:len(tail)-1], '\n'); i >= 0 || off == 0 {
			line := tail[i+1 : len(tail)-1]
			var r Record
			if err := json.Unmarshal(line, &r); err != nil || r.Chain == nil {
				return 0, "", fmt.Errorf("its last line is not an audit record: %w", keel.KindInvalid)
			}
			return r.Chain.Seq, lineHash(line), nil
		}
	}
}

// lineHash is the hash of a record's line (without its newline) that the
// next record carries in Chain.Prev.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return linePrefix + hex.EncodeToString(sum[:])
}

const linePrefix = "sha256:"

// Write appends r, which the caller has salted (Salt.Apply), with its
// Chain set to follow the last record written. r's Chain is overwritten.
// When path names another file than the open one (it was rotated or
// deleted), the device opens path first, and the chain goes on in it. It
// looks at most once a second (on Options.Clock), so records written
// within a second of a rename may still go to the renamed file, in the
// chain's order (Reopen switches at once); once it found the path not
// writable, it looks again at every write, until it is.
// A write that fails leaves no partial record: the file is cut back to
// its last whole record, and the error is of kind keel.KindUnavailable.
func (d *File) Write(r *Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	head, err := appendRecordHead(d.buf[:0], r, nil)
	if err != nil {
		return fmt.Errorf("audit: %s: encode a record: %w", d.path, errors.Join(err, keel.KindInvalid))
	}
	if err := d.ready(); err != nil {
		d.buf = head
		return err
	}
	jobs := [1]job{{head: head}}
	batch, seq, last := d.chain(jobs[:])
	d.buf = jobs[0].head
	return d.append(batch, seq, last)
}

// ready checks that d is open and that its path still names its file
// (follow). Called with d.mu held.
func (d *File) ready() error {
	if d.closed {
		return fmt.Errorf("audit: %s: the device is closed: %w", d.path, keel.KindUnavailable)
	}
	return d.follow()
}

// chain ends each job's record with its chain, and its line with a
// newline, and returns the lines to write, the Seq of the last and its
// hash. Called with d.mu held, on the writer's goroutine, whose stack is
// small: the lines are hashed at this depth, so that it does not grow.
func (d *File) chain(jobs []job) (batch []byte, seq uint64, last string) {
	seq = d.seq
	// The hashes of the lines are kept here, and made a string once for
	// the last.
	var room [hashLen]byte
	prev := append(room[:0], d.last...)
	for i := range jobs {
		seq++
		line := appendChainPrev(jobs[i].head, seq, prev)
		line = append(line, '\n')
		jobs[i].head = line
		prev = d.hashLine(room[:0], line[:len(line)-1])
	}
	last = string(prev)
	if len(jobs) == 1 {
		return jobs[0].head, seq, last
	}
	batch = d.batch[:0]
	for _, j := range jobs {
		batch = append(batch, j.head...)
	}
	if cap(batch) <= maxBatch {
		d.batch = batch
	}
	return batch, seq, last
}

// append writes batch, lines that chain ends with the record seq whose
// hash is last, in one write. A write that fails is cut back to the last
// whole record before it. Called with d.mu held.
func (d *File) append(batch []byte, seq uint64, last string) error {
	n, err := d.f.Write(batch)
	if err != nil {
		if n > 0 {
			d.f.Truncate(d.size) // best effort: the next open refuses a partial record
		}
		return fmt.Errorf("audit: %s: %w", d.path, unavailable(err))
	}
	d.size += int64(n)
	d.seq, d.last = seq, last
	return nil
}

// hashLen is the length of a line's hash, as lineHash writes it.
const hashLen = len(linePrefix) + 2*sha256.Size

// hashLine appends lineHash(line) to b, with the hash kept for it.
// Called with d.mu held.
func (d *File) hashLine(b, line []byte) []byte {
	d.sha.Reset()
	d.sha.Write(line)
	b = append(b, linePrefix...)
	return hex.AppendEncode(b, d.sha.Sum(d.sum[:0]))
}

// appendChainPrev is appendChain of the Chain{Seq: seq, Prev: prev},
// prev a line's hash (or empty), which JSON writes as it is.
func appendChainPrev(b []byte, seq uint64, prev []byte) []byte {
	b = append(b, `,"chain":{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"prev":"`...)
	b = append(b, prev...)
	return append(b, `"}}`...)
}

// follow reopens d.path when it no longer names the open file. Called
// with d.mu held.
func (d *File) follow() error {
	now := d.clock.Now()
	if now.Sub(d.checked) < followEvery {
		return nil
	}
	info, err := os.Stat(d.path)
	if err != nil || !os.SameFile(info, d.info) {
		if err := d.reopen(); err != nil {
			return err // checked again at the next write
		}
	}
	d.checked = now
	return nil
}

// Reopen closes the file and opens path again, as after a rotation (the
// example server calls it on SIGHUP). The chain goes on in the new file.
func (d *File) Reopen() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("audit: %s: the device is closed: %w", d.path, keel.KindUnavailable)
	}
	return d.reopen()
}

func (d *File) reopen() error {
	old := d.f
	if err := d.open(); err != nil {
		d.checked = time.Time{}
		return err
	}
	old.Close()
	d.checked = d.clock.Now()
	return nil
}

// Close writes the records queued by a Broker, stops the writer and
// closes the file. Writes after Close fail with keel.KindUnavailable.
func (d *File) Close() error {
	d.stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if err := d.f.Close(); err != nil {
		return fmt.Errorf("audit: %s: %w", d.path, unavailable(err))
	}
	return nil
}

// unavailable wraps an I/O error with keel.KindUnavailable.
func unavailable(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %w", err, keel.KindUnavailable)
}
