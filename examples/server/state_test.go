package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"
)

// rootTokenOf returns the root token ts printed, failing the test unless
// it printed exactly one.
func rootTokenOf(t *testing.T, ts *testServer) string {
	t.Helper()
	lines := rootTokenLine.FindAllStringSubmatch(ts.stderr.String(), -1)
	if len(lines) != 1 {
		t.Fatalf("want one Root Token line, got %d; stderr:\n%s", len(lines), ts.stderr)
	}
	return lines[0][1]
}

// vaultClient is vault/api as a user's program gets it: the default
// configuration, VAULT_ADDR and VAULT_TOKEN in the environment.
func vaultClient(t *testing.T, ts *testServer, token string) *api.Client {
	t.Helper()
	t.Setenv("VAULT_ADDR", ts.url)
	t.Setenv("VAULT_TOKEN", token)
	c, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The root token generated at the first start over a bbolt file is kept
// with the data, sealed like the rest when -seal-key-file is set: after a
// restart over the same file it still works, with vault/api in its
// default configuration, and nothing is printed again. The file holds its
// digest, never the token; sealed, not even the digest in clear. A token
// given with -root-token, or in KEEL_ROOT_TOKEN, is the root token of that
// run instead, and changes nothing that is kept.
func TestRootTokenKeptAcrossRestart(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := "plain"
		if sealed {
			name = "sealed"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "keel.db")
			args := []string{"-data", db}
			if sealed {
				key := make([]byte, 32)
				rand.Read(key)
				keyFile := filepath.Join(dir, "seal.key")
				if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-seal-key-file", keyFile)
			}
			ctx := context.Background()

			ts := start(t, hooks{}, args...)
			tok := rootTokenOf(t, ts)
			c := vaultClient(t, ts, tok)
			if err := c.KVv1("secret").Put(ctx, "app", map[string]any{"password": "p"}); err != nil {
				t.Fatalf("write with the generated root token: %v", err)
			}
			seal, err := c.Sys().SealStatus()
			if err != nil || seal.Sealed || seal.StorageType != "bolt" || !strings.HasPrefix(seal.ClusterName, "keel-cluster-") {
				t.Fatalf("seal-status = %+v, %v", seal, err)
			}
			cluster := seal.ClusterID
			if err := ts.stop(); err != nil {
				t.Fatal(err)
			}

			raw, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(tok))
			if bytes.Contains(raw, []byte(tok)) {
				t.Error("the bolt file holds the root token")
			}
			if got := bytes.Contains(raw, []byte(hex.EncodeToString(sum[:]))); got == sealed {
				t.Errorf("the bolt file holds the token's digest in clear: %v, want %v", got, !sealed)
			}

			ts = start(t, hooks{mount: mountWhoami}, args...)
			if strings.Contains(ts.stderr.String(), "Root Token") {
				t.Errorf("a restart printed a root token:\n%s", ts.stderr)
			}
			c = vaultClient(t, ts, tok)
			s, err := c.KVv1("secret").Get(ctx, "app")
			if err != nil || s.Data["password"] != "p" {
				t.Fatalf("read after restart with the saved token: %+v, %v", s, err)
			}
			self, err := c.Auth().Token().LookupSelf()
			if err != nil || self.Data["id"] != tok || self.Data["accessor"] != tokenID(tok) {
				t.Fatalf("lookup-self after restart = %+v, %v", self, err)
			}
			if seal, err := c.Sys().SealStatus(); err != nil || seal.ClusterID != cluster {
				t.Errorf("cluster id after restart = %+v, %v; want %s", seal, err, cluster)
			}
			if err := ts.stop(); err != nil {
				t.Fatal(err)
			}

			// A given token is the root token of its run; the kept one
			// is not, and comes back at the next start without it.
			t.Setenv(envRootToken, "env-root")
			for _, extra := range [][]string{{"-root-token", "flag-root"}, nil} {
				given := "env-root"
				if extra != nil {
					given = "flag-root"
				}
				ts = start(t, hooks{mount: mountWhoami}, append(append([]string{}, args...), extra...)...)
				if p, ok := ts.whoami(headerVaultToken, given); !ok || p.ID != "root" {
					t.Errorf("%s: the given token authenticates %+v (%v)", given, p, ok)
				}
				if _, ok := ts.whoami(headerVaultToken, tok); ok {
					t.Errorf("%s: the kept token is accepted too", given)
				}
				if err := ts.stop(); err != nil {
					t.Fatal(err)
				}
			}
			os.Unsetenv(envRootToken)
			ts = start(t, hooks{mount: mountWhoami}, args...)
			if p, ok := ts.whoami(headerSecretsToken, tok); !ok || p.ID != "root" {
				t.Errorf("the kept token after runs with a given one: %+v (%v)", p, ok)
			}
		})
	}
}

// A start that fails after the store is open (here: the address is taken)
// keeps no root token: the next start generates, prints and keeps one.
func TestFailedStartKeepsNoRootToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "keel.db")
	busy := start(t, hooks{}, "-data", "memory")
	addr := strings.TrimPrefix(busy.url, "http://")
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-data", db, "-addr", addr}, &stderr); err == nil {
		t.Fatal("a server started on a taken address")
	}
	if strings.Contains(stderr.String(), "Root Token") {
		t.Fatalf("a failed start printed a root token:\n%s", &stderr)
	}
	ts := start(t, hooks{mount: mountWhoami}, "-data", db)
	if p, ok := ts.whoami(headerVaultToken, rootTokenOf(t, ts)); !ok || p.ID != "root" {
		t.Errorf("the token of the first successful start: %+v (%v)", p, ok)
	}
}
