package snapshot

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/errprefix"
	"github.com/keelhq/keel/storage"
)

// The stream format (see the package documentation).
const (
	magic         = "KEELSNAP"
	formatVersion = 1
	tagRecord     = 0x01
	tagTrailer    = 0x00
	// maxKeyLen bounds a key of a stream read for a store whose Limits
	// set no MaxKeySize, so that a corrupt length cannot allocate without
	// bound.
	maxKeyLen = 1 << 20
)

const pfx errprefix.Prefix = "snapshot: "

// invalid returns an error of kind keel.KindInvalid about a stream.
func invalid(format string, args ...any) error {
	return fmt.Errorf("snapshot: "+format+": %w", append(args, keel.KindInvalid)...)
}

// ioErr classifies an error of the caller's reader or writer: one with a
// keel kind (or a context's) is kept, any other is keel.KindUnavailable.
func ioErr(what string, err error) error {
	if keel.KindOf(err) != keel.KindUnknown {
		return pfx.Wrapf(err, "%s", what)
	}
	return fmt.Errorf("snapshot: %s: %w: %w", what, err, keel.KindUnavailable)
}

// The encoder's buffers: records are appended to a chunk of chunkSize
// bytes, and at most chunks chunks are held at once (one being filled, the
// others waiting to be hashed and written, or being so).
const (
	chunkSize = 128 << 10
	chunks    = 4
)

// encoder writes a stream to w. Records are appended to a chunk; each full
// chunk is handed to a goroutine that hashes it and writes it to w, so that
// hashing and writing overlap the reading of the store (see "Cost" in the
// package documentation). stop ends the goroutine: every encoder must be
// stopped.
type encoder struct {
	w    io.Writer
	h    hash.Hash // the goroutine's until it is stopped
	buf  []byte    // the chunk being filled
	made int       // chunks allocated
	n    int64     // bytes handed over, or written by trailer
	keys int64

	full    chan []byte   // chunks to hash and write
	free    chan []byte   // chunks hashed and written
	failed  chan struct{} // closed when a write of w failed
	done    chan struct{} // closed when the goroutine returns
	werr    error         // the write error, read after failed or done
	stopped bool
}

func newEncoder(w io.Writer) *encoder {
	e := &encoder{
		w:      w,
		h:      sha256.New(),
		full:   make(chan []byte, chunks),
		free:   make(chan []byte, chunks),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	go e.drain()
	return e
}

// drain hashes and writes the chunks handed over, in order, until full is
// closed. After a write error it discards the rest, so that the encoder
// never waits on it.
func (e *encoder) drain() {
	defer close(e.done)
	for b := range e.full {
		if e.werr == nil {
			e.h.Write(b)
			if _, err := e.w.Write(b); err != nil {
				e.werr = err
				close(e.failed)
			}
		}
		e.free <- b[:0]
	}
}

// flush hands the chunk being filled over and takes an empty one.
func (e *encoder) flush() error {
	if len(e.buf) > 0 {
		e.n += int64(len(e.buf))
		e.full <- e.buf
		e.buf = nil
	}
	select {
	case <-e.failed:
		return e.werr
	default:
	}
	if e.buf == nil {
		if e.made < chunks {
			select {
			case e.buf = <-e.free:
			default:
				e.made++
				e.buf = make([]byte, 0, chunkSize)
			}
		} else {
			e.buf = <-e.free
		}
	}
	return nil
}

// stop ends the goroutine, waiting for the chunks handed over to be
// written, and returns the first write error. It may be called again.
func (e *encoder) stop() error {
	if !e.stopped {
		e.stopped = true
		close(e.full)
		<-e.done
	}
	return e.werr
}

// room makes room for n bytes in the chunk, flushing it if needed; n is at
// most chunkSize.
func (e *encoder) room(n int) error {
	if e.buf == nil || cap(e.buf)-len(e.buf) < n {
		return e.flush()
	}
	return nil
}

// appendBytes appends p to the stream, over as many chunks as it takes.
func appendBytes[B string | []byte](e *encoder, p B) error {
	for {
		k := min(len(p), cap(e.buf)-len(e.buf))
		e.buf = append(e.buf, p[:k]...)
		p = p[k:]
		if len(p) == 0 {
			return nil
		}
		if err := e.flush(); err != nil {
			return err
		}
	}
}

func (e *encoder) header(prefix string) error {
	if err := e.room(len(magic) + 2 + binary.MaxVarintLen64); err != nil {
		return err
	}
	e.buf = append(e.buf, magic...)
	e.buf = binary.BigEndian.AppendUint16(e.buf, formatVersion)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(prefix)))
	return appendBytes(e, prefix)
}

// appendRecord appends a record; key and value are copied into the chunk before
// it returns, so they may be lent bytes (see lender).
func appendRecord[K string | []byte](e *encoder, key K, value []byte) error {
	e.keys++
	size := 1 + 2*binary.MaxVarintLen64 + len(key) + len(value)
	if size <= chunkSize {
		// The common case: the whole record in one chunk, without a loop.
		if err := e.room(size); err != nil {
			return err
		}
		e.buf = append(e.buf, tagRecord)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(key)))
		e.buf = append(e.buf, key...)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(value)))
		e.buf = append(e.buf, value...)
		return nil
	}
	if err := e.room(1 + binary.MaxVarintLen64); err != nil {
		return err
	}
	e.buf = append(e.buf, tagRecord)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(key)))
	if err := appendBytes(e, key); err != nil {
		return err
	}
	if err := e.room(binary.MaxVarintLen64); err != nil {
		return err
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(len(value)))
	return appendBytes(e, value)
}

// trailer writes the record count and the checksum, and stops the
// encoder.
func (e *encoder) trailer() error {
	if err := e.room(9); err != nil {
		return err
	}
	e.buf = append(e.buf, tagTrailer)
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(e.keys))
	e.n += int64(len(e.buf))
	e.full <- e.buf
	e.buf = nil
	if err := e.stop(); err != nil {
		return err
	}
	sum := e.h.Sum(nil)
	e.n += int64(len(sum))
	_, err := e.w.Write(sum)
	return err
}

// decoder reads a stream, hashing every byte before the checksum. It
// checks what can be checked record by record: the order and prefix of
// the keys, and their sizes against limits.
type decoder struct {
	br     *bufio.Reader
	h      hash.Hash
	limits storage.Limits
	prefix string
	last   string // the previous key
	one    [1]byte
	keys   int64
	// tooLarge is the first key or value beyond the limits, refused once
	// the checksum holds.
	tooLarge error
}

func newDecoder(r io.Reader, limits storage.Limits) *decoder {
	return &decoder{br: bufio.NewReaderSize(r, 64<<10), h: sha256.New(), limits: limits}
}

// ReadByte reads and hashes one byte (io.ByteReader, for ReadUvarint).
func (d *decoder) ReadByte() (byte, error) {
	b, err := d.br.ReadByte()
	if err != nil {
		return 0, err
	}
	d.one[0] = b
	d.h.Write(d.one[:])
	return b, nil
}

// Read reads and hashes (io.Reader, to skip values).
func (d *decoder) Read(p []byte) (int, error) {
	n, err := d.br.Read(p)
	d.h.Write(p[:n])
	return n, err
}

// readErr turns an error of reading the stream into the error to return.
func readErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("truncated stream: %s missing", what)
	}
	if errors.Is(err, errVarint) {
		return invalid("corrupt stream: %s", what)
	}
	return ioErr("read the stream", err)
}

var errVarint = errors.New("bad varint")

func (d *decoder) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(d)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && keel.KindOf(err) == keel.KindUnknown {
		// ReadUvarint's own overflow error.
		return 0, errVarint
	}
	return v, err
}

// header reads the magic, the version and the prefix.
func (d *decoder) header() error {
	b := make([]byte, len(magic)+2)
	if _, err := io.ReadFull(d, b); err != nil {
		return readErr("header", err)
	}
	if string(b[:len(magic)]) != magic {
		return invalid("not a keel snapshot (no %q header)", magic)
	}
	if v := binary.BigEndian.Uint16(b[len(magic):]); v != formatVersion {
		return invalid("stream of format version %d, this keel reads version %d", v, formatVersion)
	}
	n, err := d.uvarint()
	if err != nil {
		return readErr("header prefix", err)
	}
	if n > maxKeyLen || (d.limits.MaxKeySize > 0 && n > uint64(d.limits.MaxKeySize)) {
		return invalid("corrupt stream: a prefix of %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(d, p); err != nil {
		return readErr("header prefix", err)
	}
	d.prefix = string(p)
	return nil
}

// next reads the next record: its key, and its value when load (else
// the value is skipped and nil). At the trailer it checks the count and
// the checksum and returns ok false.
func (d *decoder) next(load bool) (key string, value []byte, ok bool, err error) {
	tag, err := d.ReadByte()
	if err != nil {
		return "", nil, false, readErr("record or trailer", err)
	}
	switch tag {
	case tagTrailer:
		return "", nil, false, d.trailer()
	case tagRecord:
	default:
		return "", nil, false, invalid("corrupt stream: record %d has tag %#x", d.keys+1, tag)
	}
	kn, err := d.uvarint()
	if err != nil {
		return "", nil, false, readErr("key length", err)
	}
	if kn == 0 || kn > maxKeyLen {
		return "", nil, false, invalid("corrupt stream: record %d has a key of %d bytes", d.keys+1, kn)
	}
	if l := d.limits.MaxKeySize; l > 0 && kn > uint64(l) {
		// Not refused yet: a corrupt stream is told as corrupt, so the
		// checksum is checked first.
		if d.tooLarge == nil {
			d.tooLarge = fmt.Errorf("%w: record %d has a key of %d bytes, at most %d", storage.ErrKeyTooLarge, d.keys+1, kn, l)
		}
		if err := d.skip(kn); err != nil {
			return "", nil, false, readErr("key", err)
		}
		vn, err := d.uvarint()
		if err != nil {
			return "", nil, false, readErr("value length", err)
		}
		if err := d.skip(vn); err != nil {
			return "", nil, false, readErr("value", err)
		}
		d.keys++
		return "", nil, true, nil
	}
	kb := make([]byte, kn)
	if _, err := io.ReadFull(d, kb); err != nil {
		return "", nil, false, readErr("key", err)
	}
	key = string(kb)
	if d.keys > 0 && d.last != "" && key <= d.last {
		return "", nil, false, invalid("corrupt stream: key %q after %q: keys out of order", key, d.last)
	}
	if len(key) < len(d.prefix) || key[:len(d.prefix)] != d.prefix {
		return "", nil, false, invalid("corrupt stream: key %q is not under the stream's prefix %q", key, d.prefix)
	}
	vn, err := d.uvarint()
	if err != nil {
		return "", nil, false, readErr("value length", err)
	}
	if l := d.limits.MaxValueSize; l > 0 && vn > uint64(l) && d.tooLarge == nil {
		d.tooLarge = fmt.Errorf("%w: %q holds %d bytes, at most %d", storage.ErrValueTooLarge, key, vn, l)
	}
	if load && d.tooLarge == nil {
		value = make([]byte, vn)
		if _, err := io.ReadFull(d, value); err != nil {
			return "", nil, false, readErr("value", err)
		}
	} else if err := d.skip(vn); err != nil {
		return "", nil, false, readErr("value", err)
	}
	d.last = key
	d.keys++
	return key, value, true, nil
}

// trailer checks the count, the checksum and the end of the stream.
func (d *decoder) trailer() error {
	var b [8]byte
	if _, err := io.ReadFull(d, b[:]); err != nil {
		return readErr("record count", err)
	}
	sum := d.h.Sum(nil)
	var got [sha256.Size]byte
	if _, err := io.ReadFull(d.br, got[:]); err != nil {
		return readErr("checksum", err)
	}
	if string(got[:]) != string(sum) {
		return invalid("checksum mismatch: the stream is corrupt")
	}
	if n := binary.BigEndian.Uint64(b[:]); n != uint64(d.keys) {
		return invalid("corrupt stream: the trailer counts %d records, the stream holds %d", n, d.keys)
	}
	if _, err := d.br.ReadByte(); err != io.EOF {
		if err != nil {
			return ioErr("read the stream", err)
		}
		return invalid("corrupt stream: data after the trailer")
	}
	// The stream is intact: now a key or value beyond the limits is
	// refused.
	return d.tooLarge
}

// skip reads and hashes n bytes without keeping them.
func (d *decoder) skip(n uint64) error {
	if n > math.MaxInt64 {
		return errVarint
	}
	m, err := io.CopyN(io.Discard, d, int64(n))
	if err == nil && m != int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return err
}
