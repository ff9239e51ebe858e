package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/keelhq/keel"
)

// docConfig returns the example config of the package documentation.
func docConfig(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "# Config file")
	if !ok {
		t.Fatal("doc.go has no \"# Config file\" section")
	}
	var b strings.Builder
	in := false
	for line := range strings.Lines(rest) {
		code, isCode := strings.CutPrefix(line, "//\t")
		if isCode {
			in = true
			b.WriteString(code)
		} else if in {
			break
		}
	}
	return b.String()
}

func TestDocConfig(t *testing.T) {
	text := docConfig(t)
	cfg, err := parseConfig([]byte(text))
	if err != nil {
		t.Fatalf("the config of the documentation does not parse: %v\n%s", err, text)
	}
	authz, tokens, err := buildAuth(cfg, "kr.root")
	if err != nil {
		t.Fatalf("the config of the documentation is refused: %v", err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		token    string
		c        keel.Capability
		resource string
		allowed  bool
	}{
		{"t-alice", keel.CapRead, "secret/app/db", true},
		{"t-alice", keel.CapList, "secret/", true},
		{"t-alice", keel.CapUpdate, "secret/app/db", false},
		{"t-ci", keel.CapUpdate, "secret/app/db", true},
		{"t-ci", keel.CapRead, "secret/app/admin/key", false}, // deny wins over reader
		{"kr.root", keel.CapDelete, "anything/at/all", true},
	} {
		p, ok := tokens.lookup(tc.token)
		if !ok {
			t.Fatalf("token %s is not known", tc.token)
		}
		err := authz.Authorize(ctx, p, tc.c, tc.resource)
		if (err == nil) != tc.allowed {
			t.Errorf("%s %s %s: %v, want allowed=%v", tc.token, tc.c, tc.resource, err, tc.allowed)
		}
	}
	if p, _ := tokens.lookup("t-ci"); p.DisplayName != "ci" {
		t.Errorf("display_name of t-ci = %q, want it to default to the id", p.DisplayName)
	}
}

func TestConfigRootPolicy(t *testing.T) {
	cfg, err := parseConfig([]byte(`{"tokens": [{"token": "t-admin", "principal": {"id": "admin"}, "policies": ["root"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	authz, tokens, err := buildAuth(cfg, "kr.root")
	if err != nil {
		t.Fatalf("a token holding the built-in root policy is refused: %v", err)
	}
	p, _ := tokens.lookup("t-admin")
	if err := authz.Authorize(context.Background(), p, keel.CapSudo, "sys/x"); err != nil {
		t.Errorf("a token with the root policy is refused: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want []string // substrings of the error
	}{
		{"unknown top-level field", `{"polices": {}}`, []string{`unknown field "polices"`}},
		{"unknown principal field", `{"tokens": [{"token": "t", "principal": {"id": "a", "name": "a"}}]}`, []string{`unknown field "name"`}},
		{"unknown rule field", `{"policies": {"p": [{"path": "a/*", "caps": ["read"]}]}}`, []string{`unknown field "caps"`}},
		{"undefined policy", `{"policies": {"reader": [{"path": "a/*", "capabilities": ["read"]}]},
			"tokens": [{"token": "t", "principal": {"id": "a"}, "policies": ["reader", "writer"]}]}`,
			[]string{`tokens[0].policies: policy "writer" is not defined`}},
		{"duplicate token", `{"tokens": [
			{"token": "t-same", "principal": {"id": "a"}},
			{"token": "t-other", "principal": {"id": "b"}},
			{"token": "t-same", "principal": {"id": "c"}}]}`,
			[]string{"tokens[2].token: duplicates the token of the entry at index 0"}},
		{"root token again", `{"tokens": [{"token": "kr.root", "principal": {"id": "a"}}]}`, []string{"tokens[0].token: is the root token"}},
		{"empty token", `{"tokens": [{"principal": {"id": "a"}}]}`, []string{"tokens[0].token: is required"}},
		{"principal without id", `{"tokens": [{"token": "t", "principal": {"display_name": "A"}}]}`, []string{"tokens[0].principal.id: is required"}},
		{"star inside a path", `{"policies": {"p": [{"path": "secret/*/x", "capabilities": ["read"]}]}}`, []string{`policies["p"][0].path: "secret/*/x": "*" is allowed only at the end`}},
		{"no capabilities", `{"policies": {"p": [{"path": "secret/*", "capabilities": []}]}}`, []string{`policies["p"][0].capabilities: no capabilities`}},
		{"root policy redefined", `{"policies": {"root": [{"path": "*", "capabilities": ["read"]}]}}`, []string{`policies["root"]: the root policy is built in`}},
		{"every problem at once", `{"policies": {"p": [{"path": "", "capabilities": ["read"]}]},
			"tokens": [{"token": "t", "principal": {"id": "a"}, "policies": ["q"]}]}`,
			[]string{`policies["p"][0].path: is empty`, `tokens[0].policies: policy "q" is not defined`}},
		{"not JSON", `policies: {}`, []string{"invalid character"}},
		{"wrong type", `{"tokens": {}}`, []string{"cannot unmarshal"}},
		{"empty file", ``, []string{"empty file"}},
		{"two objects", `{} {}`, []string{"data after the JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "config.json", tc.json)
			_, _, err := loadAuth(path, "kr.root")
			if err == nil {
				t.Fatal("loadAuth accepted the config")
			}
			msg := err.Error()
			for _, w := range append([]string{path}, tc.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, secret := range []string{"t-same", "kr.root"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows a token", msg)
				}
			}
		})
	}
}

func TestConfigMissingFile(t *testing.T) {
	_, _, err := loadAuth("/nonexistent/keel.json", "kr.root")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loadAuth of a missing file = %v, want os.ErrNotExist", err)
	}
}

func TestNoConfig(t *testing.T) {
	authz, tokens, err := loadAuth("", "kr.root")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := tokens.lookup("kr.root")
	if !ok || authz.Authorize(context.Background(), p, keel.CapRead, "secret/x") != nil {
		t.Errorf("without a config the root token is %+v (%v), want a working root", p, ok)
	}
	if err := authz.Authorize(context.Background(), keel.Principal{}, keel.CapRead, "secret/x"); !errors.Is(err, keel.KindForbidden) {
		t.Errorf("anonymous read: %v, want forbidden", err)
	}
}

// An empty -root-token is refused, naming the flag: it is not "none" (a
// token generated or kept with the data), which is the flag left out.
func TestEmptyRootToken(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-data", "memory", "-root-token", ""}, &stderr)
	var usage usageError
	if !errors.As(err, &usage) || err.Error() != "-root-token: must not be empty" {
		t.Errorf("run with an empty -root-token = %v, want a usageError naming the flag", err)
	}
	// Without a root token, loadAuth builds the table of the config's
	// tokens alone: the server adds the root token kept with the data.
	_, tokens, err := loadAuth("", "")
	if err != nil || len(tokens.byDigest) != 0 {
		t.Errorf("loadAuth without a root token = %d tokens, %v; want none and no error", len(tokens.byDigest), err)
	}
}

func TestConfigPath(t *testing.T) {
	for path, want := range map[string]string{
		"":                                "",
		"RootToken":                       "-root-token",
		"Tokens[3].Principal.ID":          "tokens[3].principal.id",
		`Policies["p"][0].Path`:           `policies["p"][0].path`,
		`Policies["a.b[1]\"c"].Path`:      `policies["a.b[1]\"c"].path`, // a key is kept whole
		`Policies["Tokens"]`:              `policies["Tokens"]`,
		"Unknown.Name":                    "Unknown.Name",
		"Tokens[":                         "tokens[",
		`Policies["open`:                  `policies["open`,
		"Tokens[0].Principal.EntityID":    "tokens[0].principal.entity_id",
		"Tokens[0].Principal.DisplayName": "tokens[0].principal.display_name",
	} {
		if got := configPath(path); got != want {
			t.Errorf("configPath(%q) = %q, want %q", path, got, want)
		}
	}
}
