package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
)

// config is the file named by -config. See the package documentation for
// its format.
type config struct {
	Policies map[string][]keel.Rule `json:"policies"`
	Tokens   []tokenConfig          `json:"tokens"`
}

type tokenConfig struct {
	Token     string          `json:"token"`
	Principal principalConfig `json:"principal"`
	Policies  []string        `json:"policies"`
}

type principalConfig struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	EntityID    string `json:"entity_id"`
}

// parseConfig reads one JSON object of the config format from data. A field
// the format does not have is an error, so that a misspelt "policies" does
// not silently grant nothing.
func parseConfig(data []byte) (*config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg config
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	return &cfg, nil
}

// loadAuth builds the server's authorizer and token table from the config
// file at path (none when path is empty) and the root token given at
// start ("" when none was: see buildAuth).
func loadAuth(path, rootToken string) (*keel.RuleAuthorizer, *tokenTable, error) {
	cfg := &config{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		if cfg, err = parseConfig(data); err != nil {
			return nil, nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	authz, tokens, err := buildAuth(cfg, rootToken)
	if err != nil {
		if path == "" {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	return authz, tokens, nil
}

// buildAuth checks cfg and builds from it a RuleAuthorizer and a table of
// its tokens and the root token (none when rootToken is "": the server
// adds the stored or generated one later, see serve). It reports every problem at once, each on
// the Go path of its field in cfg ("Tokens[1].Principal.ID", and those of
// keel.NewRuleAuthorizer, whose argument is cfg.Policies) or "RootToken";
// problems names them as the file and the flags do.
func buildAuth(cfg *config, rootToken string) (*keel.RuleAuthorizer, *tokenTable, error) {
	var v keel.Validation

	// Rules on group names hold for every spelling: package identity
	// folds them itself (keel.Fold).
	authz, err := keel.NewRuleAuthorizer(cfg.Policies)
	if err != nil {
		fields := keel.FieldErrors(err)
		if len(fields) == 0 {
			v.Add("Policies", "%s", err)
		}
		for _, fe := range fields {
			v.Add(fe.Field, "%s", fe.Rule)
		}
	}

	tokens := newTokenTable()
	if rootToken != "" {
		tokens.add(rootToken, rootPrincipal())
	}
	seen := make(map[string]int, len(cfg.Tokens)) // token -> index of its entry
	for i, tc := range cfg.Tokens {
		field := fmt.Sprintf("Tokens[%d]", i)
		if tc.Principal.ID == "" {
			v.Add(field+".Principal.ID", "is required")
		}
		for _, name := range tc.Policies {
			if _, ok := cfg.Policies[name]; !ok && name != keel.RootPolicy {
				v.Add(field+".Policies", "policy %q is not defined", name)
			}
		}
		p := keel.Principal{
			ID:          tc.Principal.ID,
			DisplayName: tc.Principal.DisplayName,
			EntityID:    tc.Principal.EntityID,
			Policies:    slices.Clone(tc.Policies),
		}
		if p.DisplayName == "" {
			p.DisplayName = p.ID
		}
		first, dup := seen[tc.Token]
		switch {
		case tc.Token == "":
			v.Add(field+".Token", "is required")
		case tc.Token == rootToken:
			v.Add(field+".Token", "is the root token")
		case dup:
			v.Add(field+".Token", "duplicates the token of the entry at index %d", first)
		default:
			seen[tc.Token] = i
			tokens.add(tc.Token, p)
		}
	}

	if v.Len() > 0 {
		return nil, nil, errors.New(problems(v.Err()))
	}
	return authz, tokens, nil
}

// configNames maps the Go names of the fields of config (and of
// buildAuth's rootToken) to what the server's users write: the keys of the
// config file, and the flag.
var configNames = map[string]string{
	"Policies": "policies", "Path": "path", "Capabilities": "capabilities",
	"Tokens": "tokens", "Token": "token", "Principal": "principal",
	"ID": "id", "DisplayName": "display_name", "EntityID": "entity_id",
	"RootToken": "-root-token",
}

// configPath returns the Go path of a field of config as the file names
// it: each name through configNames (a name it lacks stays as it is),
// indices and quoted map keys as they are (`policies["dev"][0].path`).
func configPath(path string) string {
	var b strings.Builder
	for path != "" {
		n := strings.IndexAny(path, ".[")
		switch {
		case n < 0:
			n = len(path)
		case n == 0 && path[0] == '[':
			if q, err := strconv.QuotedPrefix(path[1:]); err == nil {
				n = 1 + len(q) // past the key, which may hold '.' or '['
			}
			if end := strings.IndexByte(path[n:], ']'); end >= 0 {
				n += end + 1
			} else {
				n = len(path)
			}
			b.WriteString(path[:n])
			path = path[n:]
			continue
		case n == 0:
			b.WriteByte('.')
			path = path[1:]
			continue
		}
		name := path[:n]
		if wire, ok := configNames[name]; ok {
			name = wire
		}
		b.WriteString(name)
		path = path[n:]
	}
	return b.String()
}

// problems lists the field errors of err as "field: rule; field: rule",
// fields named by configPath.
func problems(err error) string {
	var parts []string
	for _, fe := range keel.FieldErrors(err) {
		parts = append(parts, (&keel.FieldError{Field: configPath(fe.Field), Rule: fe.Rule}).Error())
	}
	return strings.Join(parts, "; ")
}
