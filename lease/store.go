package lease

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelhq/keel"
)

// The layout of the manager's keys in the store given to New (see the
// package documentation):
//
//	id/<lease id>                        the lease record (encodeEntry)
//	due/<16 hex digits>/<lease id>       expiry index: NextAttempt in Unix
//	                                     nanoseconds, big-endian hex, so
//	                                     that key order is time order
//	irrevocable/<lease id>               irrevocable index: mount and error
const (
	idPrefix    = "id/"
	duePrefix   = "due/"
	irrPrefix   = "irrevocable/"
	dueTimeLen  = 16 // hex digits of a uint64
	dueKeyExtra = len(duePrefix) + dueTimeLen + 1
)

// emptyValue is the value of index entries; the key says everything.
var emptyValue = []byte{}

func idKey(id string) string  { return idPrefix + id }
func irrKey(id string) string { return irrPrefix + id }

// dueKey returns the expiry-index key of lease id due at t. Instants
// before 1970 sort as 1970.
func dueKey(t time.Time, id string) string {
	var n uint64
	if ns := unixNano(t); ns > 0 {
		n = uint64(ns)
	}
	var raw [8]byte
	binary.BigEndian.PutUint64(raw[:], n)
	var b strings.Builder
	b.Grow(dueKeyExtra + len(id))
	b.WriteString(duePrefix)
	var h [dueTimeLen]byte
	hex.Encode(h[:], raw[:])
	b.Write(h[:])
	b.WriteByte('/')
	b.WriteString(id)
	return b.String()
}

// isDueKey reports whether key is dueKey(t, id), without building it.
func isDueKey(key string, t time.Time, id string) bool {
	if len(key) != dueKeyExtra+len(id) || key[:len(duePrefix)] != duePrefix || key[dueKeyExtra-1] != '/' || key[dueKeyExtra:] != id {
		return false
	}
	var n uint64
	if ns := unixNano(t); ns > 0 {
		n = uint64(ns)
	}
	const digits = "0123456789abcdef"
	for i := dueKeyExtra - 2; i >= len(duePrefix); i-- {
		if key[i] != digits[n&0xf] {
			return false
		}
		n >>= 4
	}
	return true
}

var errBadDueKey = errors.New("malformed expiry-index key")

// parseDueKey splits an expiry-index key (with its "due/" prefix) into the
// instant and the lease id. It accepts exactly what dueKey writes for a
// non-empty id: lower-case hex digits.
func parseDueKey(key string) (time.Time, string, error) {
	if len(key) <= dueKeyExtra || !strings.HasPrefix(key, duePrefix) || key[dueKeyExtra-1] != '/' {
		return time.Time{}, "", errBadDueKey
	}
	digits := key[len(duePrefix) : dueKeyExtra-1]
	var raw [8]byte
	for i := 0; i < dueTimeLen; i++ {
		c := digits[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return time.Time{}, "", errBadDueKey
		}
	}
	if _, err := hex.Decode(raw[:], []byte(digits)); err != nil {
		return time.Time{}, "", errBadDueKey
	}
	n := binary.BigEndian.Uint64(raw[:])
	if n > math.MaxInt64 {
		return time.Time{}, "", errBadDueKey
	}
	return fromUnixNano(int64(n)), key[dueKeyExtra:], nil
}

// unixNano returns t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is the inverse of unixNano: 0 is the zero time, anything
// else an instant in UTC.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// norm returns t as the store gives it back: UTC, nanosecond precision, no
// monotonic reading. Every instant the manager keeps goes through it, so
// that a Lease returned by Issue equals the one Get returns.
func norm(t time.Time) time.Time { return fromUnixNano(unixNano(t)) }

// entry is a stored lease: the Lease without ID and Path (both come from
// the key) and the TTL it was issued with, which a renewal with a zero
// increment grants again.
type entry struct {
	Lease
	IssuedTTL time.Duration
}

const (
	recordVersion   = 1
	flagRenewable   = 1 << 0
	flagToken       = 1 << 1
	flagIrrevocable = 1 << 2
	knownFlags      = flagRenewable | flagToken | flagIrrevocable
)

// encodeEntry encodes e in the record format, version 1:
//
//	version byte (1), flags byte (renewable 1, token 2, irrevocable 4),
//	mount (uvarint length + bytes),
//	IssueTime, ExpireTime, LastRenewalTime, NextAttempt (varint Unix
//	nanoseconds each, 0 for the zero time),
//	MaxTTL, IssuedTTL (uvarint nanoseconds), Attempts (uvarint),
//	LastError, Data (uvarint length + bytes each).
func encodeEntry(e *entry) []byte {
	b := make([]byte, 0, 2+4*binary.MaxVarintLen64+3*binary.MaxVarintLen64+3*2+len(e.Mount)+len(e.LastError)+len(e.Data))
	var flags byte
	if e.Renewable {
		flags |= flagRenewable
	}
	if e.Token {
		flags |= flagToken
	}
	if e.Irrevocable {
		flags |= flagIrrevocable
	}
	b = append(b, recordVersion, flags)
	b = appendString(b, e.Mount)
	for _, t := range [...]time.Time{e.IssueTime, e.ExpireTime, e.LastRenewalTime, e.NextAttempt} {
		b = binary.AppendVarint(b, unixNano(t))
	}
	b = binary.AppendUvarint(b, uint64(max(e.MaxTTL, 0)))
	b = binary.AppendUvarint(b, uint64(max(e.IssuedTTL, 0)))
	b = binary.AppendUvarint(b, uint64(max(e.Attempts, 0)))
	b = appendString(b, e.LastError)
	b = binary.AppendUvarint(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeEntry decodes the record of lease id. It fails, with an error of
// kind keel.KindInternal, on anything encodeEntry does not write: another
// version, unknown flags, truncated or trailing bytes, out-of-range
// numbers.
func decodeEntry(id string, b []byte) (entry, error) {
	return decodeRecord(id, b, true)
}

// decodeIndexed decodes the record of lease id as decodeEntry does, and
// fails where it fails, but leaves out Mount, LastError and Data, which
// removing a lease does not need (deleteEntry), so as not to copy them.
func decodeIndexed(id string, b []byte) (entry, error) {
	return decodeRecord(id, b, false)
}

func decodeRecord(id string, b []byte, full bool) (entry, error) {
	d := decoder{b: b}
	var e entry
	version, flags := d.byte(), d.byte()
	if d.err == nil && version != recordVersion {
		d.fail()
	}
	if flags&^knownFlags != 0 {
		d.fail()
	}
	e.Renewable = flags&flagRenewable != 0
	e.Token = flags&flagToken != 0
	e.Irrevocable = flags&flagIrrevocable != 0
	mount := d.bytes()
	e.IssueTime = fromUnixNano(d.varint())
	e.ExpireTime = fromUnixNano(d.varint())
	e.LastRenewalTime = fromUnixNano(d.varint())
	e.NextAttempt = fromUnixNano(d.varint())
	e.MaxTTL = time.Duration(d.uvarint(math.MaxInt64))
	e.IssuedTTL = time.Duration(d.uvarint(math.MaxInt64))
	e.Attempts = int(d.uvarint(math.MaxInt32))
	lastError := d.bytes()
	data := d.bytes()
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return entry{}, fmt.Errorf("lease %q: stored record is corrupt: %w", id, keel.KindInternal)
	}
	if full {
		e.Mount, e.LastError = string(mount), string(lastError)
		if len(data) > 0 {
			e.Data = bytes.Clone(data)
		}
	}
	e.ID = id
	e.Path = pathOf(id)
	return e, nil
}

// pathOf returns the request path of a lease id: all but its last segment.
func pathOf(id string) string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		return id[:i]
	}
	return ""
}

// encodeIrr encodes the value of an irrevocable-index entry: the mount and
// the error, each as uvarint length + bytes.
func encodeIrr(mount, msg string) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(mount)+len(msg))
	b = appendString(b, mount)
	return appendString(b, msg)
}

// decodeIrr is the inverse of encodeIrr.
func decodeIrr(b []byte) (mount, msg string, err error) {
	d := decoder{b: b}
	mount, msg = d.string(), d.string()
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return mount, msg, d.err
}

var errCorrupt = errors.New("corrupt record")

// decoder reads the record format; after the first error every read
// returns a zero value and err stays set.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err = errCorrupt }

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

// bytes returns the next length-prefixed bytes, in place.
func (d *decoder) bytes() []byte {
	n := d.uvarint(uint64(len(d.b)))
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

// maxErrorLen is how many bytes of the error of its last failed
// revocation a lease keeps (Lease.LastError, IrrevocableLease.Error): a
// longer error is cut, on a character boundary, to at most maxErrorLen
// bytes of valid UTF-8.
const maxErrorLen = 240

// truncateError cuts msg to at most maxErrorLen bytes on a rune boundary,
// so that it stays valid UTF-8 and holds at most maxErrorLen characters.
func truncateError(msg string) string {
	if len(msg) <= maxErrorLen {
		return msg
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
