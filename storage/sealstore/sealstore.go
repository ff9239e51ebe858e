package sealstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// KeySize is the size of a sealing key: AES-256.
const KeySize = 32

const (
	formatV1 = 0x01
	idSize   = 4
	// overhead is how many bytes sealing adds to a value.
	overhead = 1 + idSize + 12 + 16
)

// Store seals values with AES-256-GCM on their way into an underlying
// store and opens them on the way out. Keys are stored in clear: do not put
// secrets in key names. Create one with New; it is safe for concurrent use.
type Store struct {
	inner  storage.Store
	active *sealKey
	keys   map[[idSize]byte]*sealKey
}

// Claims returns the claims of the store it seals (see storage.Claims): a
// sealed view and a plain view of one store own the same keys.
func (s *Store) Claims() *storage.Claims { return storage.ClaimsOf(s.inner) }

var _ storage.Store = (*Store)(nil)

type sealKey struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// Options are the optional settings of New.
type Options struct {
	// Previous are keys that opened values before active replaced them:
	// values sealed with any of them still open, and Reseal moves them to
	// the active key. Each must be KeySize bytes.
	Previous [][]byte
}

// New returns a Store over inner that seals with active and opens values
// sealed with active or with any of opts.Previous (nil opts: no previous
// key). A nil inner, or a key that is not KeySize bytes, is refused with
// an error of kind keel.KindInvalid naming it.
func New(inner storage.Store, active []byte, opts *Options) (*Store, error) {
	if inner == nil {
		return nil, fmt.Errorf("sealstore: %w", keel.Invalid("Store", "must not be nil"))
	}
	var previous [][]byte
	if opts != nil {
		previous = opts.Previous
	}
	s := &Store{inner: inner, keys: make(map[[idSize]byte]*sealKey, 1+len(previous))}
	for i, k := range append([][]byte{active}, previous...) {
		field := "Active"
		if i > 0 {
			field = fmt.Sprintf("Options.Previous[%d]", i-1)
		}
		sk, err := newKey(field, k)
		if err != nil {
			return nil, fmt.Errorf("sealstore: key %d: %w", i, err)
		}
		if _, dup := s.keys[sk.id]; !dup {
			s.keys[sk.id] = sk
		}
		if i == 0 {
			s.active = sk
		}
	}
	return s, nil
}

// newKey checks and prepares k, the argument field of New ("Active" or
// "Options.Previous[i]", as a Go path for keel.FieldError).
func newKey(field string, k []byte) (*sealKey, error) {
	if len(k) != KeySize {
		return nil, keel.Invalid(field, "must be %d bytes, not %d", KeySize, len(k))
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sk := &sealKey{aead: aead}
	copy(sk.id[:], keyID(k))
	return sk, nil
}

func keyID(k []byte) []byte {
	sum := sha256.Sum256(append([]byte("keel seal key id\x00"), k...))
	return sum[:idSize]
}

// KeyID returns the identifier stored with every value sealed by key: 8 hex
// digits derived from the key by SHA-256. It names a key in logs and errors
// without revealing it.
func KeyID(key []byte) string { return hex.EncodeToString(keyID(key)) }

// GenerateKey returns a new random key.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails: crypto/rand crashes the program instead
	return k
}

// ParseKeys reads keys from text: one key per line, in standard base64 or in
// hex; blank lines and lines starting with "#" are skipped. The first key is
// the active one, the others are previous keys. A refusal is of kind
// keel.KindInvalid on the field "Text", naming the line.
func ParseKeys(text []byte) (active []byte, previous [][]byte, err error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	line := 0
	var keys [][]byte
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, herr := hex.DecodeString(l)
		if herr != nil || len(k) != KeySize {
			var berr error
			k, berr = base64.StdEncoding.DecodeString(l)
			if berr != nil {
				return nil, nil, keel.Invalid("Text", "line %d: not a key in base64 or hex", line)
			}
		}
		if len(k) != KeySize {
			return nil, nil, keel.Invalid("Text", "line %d: key is %d bytes, must be %d", line, len(k), KeySize)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, nil, keel.Invalid("Text", "no key found")
	}
	return keys[0], keys[1:], nil
}

// ReadKeyFile reads keys from the file at path with ParseKeys.
func ReadKeyFile(path string) (active []byte, previous [][]byte, err error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("sealstore: %w", err)
	}
	active, previous, err = ParseKeys(text)
	if err != nil {
		return nil, nil, fmt.Errorf("sealstore: %s: %w", path, err)
	}
	return active, previous, nil
}

func (s *Store) seal(key string, value []byte) []byte {
	out := make([]byte, 1+idSize+12, overhead+len(value))
	out[0] = formatV1
	copy(out[1:], s.active.id[:])
	nonce := out[1+idSize:]
	rand.Read(nonce) // never fails: crypto/rand crashes the program instead
	return s.active.aead.Seal(out, nonce, value, []byte(key))
}

func (s *Store) open(key string, sealed []byte) ([]byte, error) {
	if len(sealed) < overhead || sealed[0] != formatV1 {
		return nil, fmt.Errorf("sealstore: value at %q is not a sealed value: %w", key, keel.KindInternal)
	}
	var id [idSize]byte
	copy(id[:], sealed[1:])
	k, ok := s.keys[id]
	if !ok {
		return nil, fmt.Errorf("sealstore: value at %q was sealed with key %x, which is not configured: %w", key, id, keel.KindUnavailable)
	}
	nonce := sealed[1+idSize : 1+idSize+12]
	plain, err := k.aead.Open(nil, nonce, sealed[1+idSize+12:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("sealstore: value at %q does not authenticate with key %x: it was altered or moved from another key: %w", key, id, keel.KindInternal)
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}

// View runs fn over the underlying store's View, opening values as fn reads
// them.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.inner.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, &sealTx{s: s, tx: tx})
	})
}

// Update runs fn over the underlying store's Update, sealing values as fn
// writes them.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.inner.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, &sealTx{s: s, tx: tx})
	})
}

// Limits are the underlying store's, less overhead in value size. The
// underlying store counts sealed sizes against MaxTxBytes: each Put of a
// transaction uses overhead bytes more of it than the value's size.
func (s *Store) Limits() storage.Limits {
	l := s.inner.Limits()
	if l.MaxValueSize > 0 {
		l.MaxValueSize -= overhead
	}
	return l
}

// Close closes the underlying store.
func (s *Store) Close() error { return s.inner.Close() }

// Watch reports the keys under prefix written through the inner store, as
// storage.Watcher, when that store is one (keys are not sealed, only
// values).
func (s *Store) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	return storage.Watch(ctx, s.inner, prefix, fn)
}

// Reseal seals again with the active key every value under prefix that was
// sealed with a previous key, and returns how many it rewrote. After it,
// previous keys may be dropped from New.
//
// It works with storage.Batch over the underlying store, in transactions
// sized from that store's Limits (operations, reads and bytes alike, so
// that they fit etcd's), of at most batch values when batch is positive;
// zero means as many as the limits allow. A value sealed with the active key
// already is left as it is: Reseal is resumable, and run again after an
// error or a crash, it rewrites only what is still stale. A stale value that
// does not open (its key is not configured, or it does not authenticate)
// ends Reseal with the error of a Get of it; the batches before stay
// committed.
func (s *Store) Reseal(ctx context.Context, prefix string, batch int) (int, error) {
	c := &resealCount{Store: s.inner, limits: s.inner.Limits()}
	if batch > 0 && (c.limits.MaxTxOps == 0 || batch < c.limits.MaxTxOps) {
		// Batch sizes its transactions from MaxTxOps among others, at one
		// write per value.
		c.limits.MaxTxOps = batch
	}
	_, err := storage.Batch(ctx, c, prefix, nil, func(tx storage.Tx, key string, sealed []byte) error {
		if len(sealed) < 1+idSize || bytes.Equal(sealed[1:1+idSize], s.active.id[:]) {
			return nil
		}
		plain, err := s.open(key, sealed)
		if err != nil {
			return err
		}
		// The same size as the value it replaces: Batch counted it.
		if err := tx.Put(key, s.seal(key, plain)); err != nil {
			return err
		}
		c.run++
		return nil
	})
	return c.total, err
}

// resealCount is the store Reseal gives storage.Batch: the underlying store,
// with the limits Reseal sizes its batches by, counting the values rewritten
// by the last run of each committed Update's closure (a closure may run
// more than once, and a batch may fail).
type resealCount struct {
	storage.Store
	limits     storage.Limits
	run, total int
}

func (c *resealCount) Limits() storage.Limits { return c.limits }

func (c *resealCount) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	err := c.Store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		c.run = 0
		return fn(ctx, tx)
	})
	if err == nil {
		c.total += c.run
	}
	return err
}

type sealTx struct {
	s  *Store
	tx storage.Tx
}

func (t *sealTx) Get(key string) ([]byte, error) {
	v, err := t.tx.Get(key)
	if err != nil {
		return nil, err
	}
	return t.s.open(key, v)
}

// Size returns the size of the value opened, the sealed one's less
// overhead (storage.Sizer).
func (t *sealTx) Size(key string) (int, error) {
	n, err := storage.SizeOf(t.tx, key)
	if err != nil {
		return 0, err
	}
	return max(n-overhead, 0), nil
}

func (t *sealTx) Put(key string, value []byte) error {
	if err := t.s.Limits().CheckValue(key, value); err != nil {
		return err
	}
	return t.tx.Put(key, t.s.seal(key, value))
}

func (t *sealTx) Delete(key string) error { return t.tx.Delete(key) }

func (t *sealTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if opts.KeysOnly {
		return t.tx.Scan(prefix, opts, fn)
	}
	return t.tx.Scan(prefix, opts, func(key string, v []byte) error {
		plain, err := t.s.open(key, v)
		if err != nil {
			return err
		}
		return fn(key, plain)
	})
}
