package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/sealstore"
)

var marker = []byte("plaintext-marker")

// putMarker opens the store as the server does, writes marker at "marker",
// and closes it.
func putMarker(t *testing.T, data, keyFile string) {
	t.Helper()
	st, err := openStore(data, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Update(context.Background(), func(_ context.Context, tx storage.Tx) error {
		return tx.Put("marker", marker)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSealKeyFile(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "seal.key")
	key := "# the active key\n" + hex.EncodeToString(sealstore.GenerateKey()) + "\n"
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	sealed := filepath.Join(dir, "sealed.db")

	// The server starts on a sealed bolt file.
	ts := start(t, hooks{}, "-data", sealed, "-seal-key-file", keyFile)
	if status, body := ts.get("/v1/sys/health"); status != http.StatusOK {
		t.Fatalf("health: status %d: %s", status, body)
	}
	if err := ts.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}

	// What goes through that store is not in the file in clear...
	putMarker(t, sealed, keyFile)
	raw, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, marker) {
		t.Error("the sealed bolt file contains the value in clear")
	}
	if !bytes.Contains(raw, []byte("marker")) {
		t.Error("the key is not in the file: the write did not reach it")
	}

	// ...but reads back through the same keys.
	st, err := openStore(sealed, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	err = st.View(context.Background(), func(_ context.Context, tx storage.Tx) error {
		got, err = tx.Get("marker")
		return err
	})
	st.Close()
	if err != nil || !bytes.Equal(got, marker) {
		t.Errorf("read back %q, %v; want %q", got, err, marker)
	}

	// Without -seal-key-file the same write is in the file in clear, so
	// the check above means something.
	plain := filepath.Join(dir, "plain.db")
	putMarker(t, plain, "")
	if raw, err := os.ReadFile(plain); err != nil || !bytes.Contains(raw, marker) {
		t.Errorf("the unsealed bolt file does not contain the value in clear (err %v)", err)
	}
}
