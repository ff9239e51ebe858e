package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestVaultCLI runs the vault CLI, when one is on PATH, against the
// server, with nothing but VAULT_ADDR and VAULT_TOKEN (and a HOME of its
// own, so that no token helper of the user's interferes): `vault status`
// succeeds and says unsealed; `vault kv put` and `vault kv get` work on
// the kv version 1 mount secret/ (the CLI first asks
// sys/internal/ui/mounts/secret/… for the kv version); `vault token
// lookup` describes the token.
func TestVaultCLI(t *testing.T) {
	bin, err := exec.LookPath("vault")
	if err != nil {
		t.Skip("no vault CLI on PATH")
	}
	const token = "cli-root-token"
	ts := start(t, hooks{}, "-data", "memory", "-root-token", token)
	env := append(os.Environ(), "VAULT_ADDR="+ts.url, "VAULT_TOKEN="+token, "HOME="+t.TempDir(),
		"VAULT_NAMESPACE=", "VAULT_CACERT=", "VAULT_FORMAT=")
	vault := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("vault %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := vault("status"); !strings.Contains(out, "Sealed") || !strings.Contains(out, "false") {
		t.Errorf("vault status:\n%s", out)
	}
	vault("kv", "put", "secret/cli", "password=s3cr3t")
	if out := vault("kv", "get", "-field=password", "secret/cli"); strings.TrimSpace(out) != "s3cr3t" {
		t.Errorf("vault kv get -field=password: %q", out)
	}
	if out := vault("kv", "get", "secret/cli"); !strings.Contains(out, "s3cr3t") {
		t.Errorf("vault kv get:\n%s", out)
	}
	if out := vault("token", "lookup"); !strings.Contains(out, "root") {
		t.Errorf("vault token lookup:\n%s", out)
	}
}
