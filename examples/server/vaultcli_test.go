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
// lookup` describes the token; kv list, secrets list and enable, identity
// group write, read (any spelling of the name) and list, a password policy
// written and generated from, and a leased kv read's lease renewed, looked
// up and revoked work too. CI has no vault CLI (Vault does not build from
// the module proxy as it is), so there the test is skipped; it was run by
// hand with a Vault 1.21.4 CLI built beside the project.
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
	if out := vault("kv", "list", "secret/"); !strings.Contains(out, "cli") {
		t.Errorf("vault kv list:\n%s", out)
	}
	if out := vault("secrets", "list"); !strings.Contains(out, "secret/") {
		t.Errorf("vault secrets list:\n%s", out)
	}

	// Identity groups, with the CLI's one-key metadata form.
	vault("write", "identity/group", "name=admins", "policies=ops", "metadata=team=a")
	if out := vault("read", "-field=name", "identity/group/name/ADMINS"); strings.TrimSpace(out) != "admins" {
		t.Errorf("vault read identity/group/name/ADMINS: %q", out)
	}
	if out := vault("list", "identity/group/name"); !strings.Contains(out, "admins") {
		t.Errorf("vault list identity/group/name:\n%s", out)
	}

	// Password policies.
	vault("write", "sys/policies/password/digits", `policy=length = 12
rule "charset" { charset = "0123456789" }`)
	if out := strings.TrimSpace(vault("read", "-field=password", "sys/policies/password/digits/generate")); len(out) != 12 || strings.Trim(out, "0123456789") != "" {
		t.Errorf("vault read sys/policies/password/digits/generate: %q", out)
	}

	// Leases of a leased kv mount: renew, lookup, revoke.
	vault("secrets", "enable", "-path=leased", "-options=leased_passthrough=true", "kv")
	vault("kv", "put", "leased/db", "password=p", "ttl=10m")
	id := strings.TrimSpace(vault("read", "-field=lease_id", "leased/db"))
	if !strings.HasPrefix(id, "leased/db/") {
		t.Fatalf("vault read -field=lease_id leased/db: %q", id)
	}
	if out := vault("lease", "renew", "-increment=5m", id); !strings.Contains(out, "5m") {
		t.Errorf("vault lease renew:\n%s", out)
	}
	if out := vault("lease", "lookup", id); !strings.Contains(out, id) {
		t.Errorf("vault lease lookup:\n%s", out)
	}
	vault("lease", "revoke", "-sync", id)
	cmd := exec.Command(bin, "lease", "lookup", id)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("vault lease lookup of a revoked lease succeeded:\n%s", out)
	}
	vault("kv", "delete", "secret/cli")
	cmd = exec.Command(bin, "kv", "get", "secret/cli")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("vault kv get of a deleted secret succeeded:\n%s", out)
	}
}
