package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// loggedStore logs the Gets of its Views' transactions; they tell sizes
// (storage.Sizer) when sized is set.
type loggedStore struct {
	storage.Store
	sized bool
	log   *[]string
}

func (s loggedStore) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.Store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		l := &loggedTx{Tx: tx, log: s.log}
		if s.sized {
			return fn(ctx, sizedTx{l})
		}
		return fn(ctx, l)
	})
}

type loggedTx struct {
	storage.Tx
	log *[]string
}

func (t *loggedTx) Get(key string) ([]byte, error) {
	*t.log = append(*t.log, "get "+key)
	return t.Tx.Get(key)
}

type sizedTx struct{ *loggedTx }

func (t sizedTx) Size(key string) (int, error) { return storage.SizeOf(t.Tx, key) }

// TestReserving: a value of keel.LargeValue bytes or more is reserved
// (copies times its size) through the context's Reserver before it is
// loaded when the store tells sizes, after it is loaded when it does not;
// a refused reservation is Reserving's error, and from a store that tells
// sizes the value is then never loaded; a smaller value, or a context
// without a Reserver, reserves nothing.
func TestReserving(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(nil)
	defer mem.Close()
	large := strings.Repeat("x", keel.LargeValue)
	if err := mem.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return errors.Join(tx.Put("small", []byte("abc")), tx.Put("large", []byte(large)))
	}); err != nil {
		t.Fatal(err)
	}
	refused := fmt.Errorf("no room: %w", keel.KindUnavailable)
	for _, tc := range []struct {
		name     string
		sized    bool
		key      string
		reserver bool
		refuse   bool
		want     []string
		wantErr  error
	}{
		{name: "no reserver", sized: true, key: "large", want: []string{"get large"}},
		{name: "small", sized: true, key: "small", reserver: true, want: []string{"get small"}},
		{name: "large, sized", sized: true, key: "large", reserver: true, want: []string{fmt.Sprintf("reserve %d", 2*len(large)), "get large"}},
		{name: "large, sized, refused", sized: true, key: "large", reserver: true, refuse: true, want: []string{fmt.Sprintf("reserve %d", 2*len(large))}, wantErr: refused},
		{name: "large, not sized", key: "large", reserver: true, want: []string{"get large", fmt.Sprintf("reserve %d", 2*len(large))}},
		{name: "large, not sized, refused", key: "large", reserver: true, refuse: true, want: []string{"get large", fmt.Sprintf("reserve %d", 2*len(large))}, wantErr: refused},
		{name: "missing", sized: true, key: "none", reserver: true, wantErr: storage.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			s := loggedStore{Store: mem, sized: tc.sized, log: &log}
			ctx := ctx
			if tc.reserver {
				ctx = keel.WithReserver(ctx, func(ctx context.Context, n int64) error {
					log = append(log, fmt.Sprintf("reserve %d", n))
					if tc.refuse {
						return refused
					}
					return nil
				})
			}
			var got []byte
			err := storage.Reserving(ctx, 2, func(ld *storage.Loader) error {
				return s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
					var err error
					got, err = ld.Get(tx, tc.key)
					return err
				})
			})
			if !errors.Is(err, tc.wantErr) || tc.wantErr == nil && err != nil {
				t.Fatalf("Reserving: %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(log, tc.want) {
				t.Errorf("events %q, want %q", log, tc.want)
			}
			if err == nil && len(got) == 0 {
				t.Errorf("no value read")
			}
		})
	}
}
