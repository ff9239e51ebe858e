package tfeharness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// providerModule is the tfe provider, a tool dependency of this module
// (go.mod): its version there is the one built and configured.
const providerModule = "github.com/hashicorp/terraform-provider-tfe"

// groups are the Terraform working directories of TestTerraform: the
// files of testdata/terraform each one is made of (provider.tf is in
// all). The groups but "organization" and "all" work in an organization
// the harness creates through the API, so that they do not depend on
// tfe_organization; "all" is everything in one configuration, the
// organization included.
var groups = []struct {
	name  string
	files []string
}{
	{"organization", []string{"organization.tf"}},
	{"projects", []string{"org_given.tf", "projects.tf"}},
	{"teams", []string{"org_given.tf", "teams.tf"}},
	{"policies", []string{"org_given.tf", "policies.tf"}},
	{"all", []string{"organization.tf", "projects.tf", "teams.tf", "policies.tf"}},
}

// terraformCLI is the Terraform CLI on PATH, or the error that says it is
// missing.
func terraformCLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("the Terraform CLI (terraform) is not on PATH: %v; install Terraform (1.11 or later); CI machines have it in their image", err)
	}
	return path
}

// buildProvider builds the tfe provider of this module's go.mod into a
// filesystem mirror, once per run, and writes a Terraform CLI
// configuration that installs providers from that mirror only. It returns
// the configuration's path and the provider's version.
var buildProvider = sync.OnceValues(func() (cliConfig string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := command(ctx, ".", goEnv, "go", "list", "-m", "-f", "{{.Version}}", providerModule)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	version := strings.TrimSpace(string(out))
	mirror := filepath.Join(workDir, "mirror")
	bin := filepath.Join(mirror, "registry.terraform.io", "hashicorp", "tfe", strings.TrimPrefix(version, "v"),
		runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-tfe_"+version)
	start := time.Now()
	if out, err := command(ctx, ".", goEnv, "go", "build", "-o", bin, providerModule); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "tfeharness: built terraform-provider-tfe %s in %v\n", version, time.Since(start).Round(100*time.Millisecond))
	cliConfig = filepath.Join(workDir, "terraform.rc")
	rc := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)
	return cliConfig, os.WriteFile(cliConfig, []byte(rc), 0o644)
})

// TestTerraform runs each group of resources through the Terraform CLI
// and the tfe provider against the example server, over TLS, found by
// discovery: apply, plan with no changes, change, plan with no changes,
// import of every resource and plan with no changes, destroy. Each step
// is a subtest, which fails when the step fails and is not listed in
// KNOWN-FAILURES.md ("terraform/GROUP/STEP"); a failed step ends its
// group. At the end the outcomes are compared with the list.
func TestTerraform(t *testing.T) {
	t.Parallel()
	tf := terraformCLI(t)
	cliConfig, err := buildProvider()
	if err != nil {
		t.Fatalf("building the tfe provider: %v", err)
	}
	srv := startServer(t)
	res := results{outcome: map[string]string{}, output: map[string]string{}}
	var mu sync.Mutex
	ranGroups := map[string]bool{}
	res.ran = func(name string) bool {
		group, _, _ := strings.Cut(strings.TrimPrefix(name, "terraform/"), "/")
		return ranGroups[group]
	}
	known := readKnownEntries(t)
	// After the groups, which run in parallel: cleanups run once the
	// subtests are done, and this one before the server stops.
	t.Cleanup(func() { checkKnown(t, "terraform/", res) })
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			mu.Lock()
			ranGroups[g.name] = true
			mu.Unlock()
			w := newWorkspace(t, tf, cliConfig, srv, g.name, g.files)
			for _, st := range w.steps() {
				name := "terraform/" + g.name + "/" + st.name
				var out string
				var err error
				ok := t.Run(st.name, func(t *testing.T) {
					start := time.Now()
					out, err = st.run(t)
					t.Logf("%s: %v", st.name, time.Since(start).Round(10*time.Millisecond))
					if err == nil {
						return
					}
					if e, listed := known[name]; listed && e.result == fail {
						t.Logf("known failure (%s): %v\n%s", e.reason, err, out)
						return
					}
					t.Errorf("FAILED, and not in %s: %v\n%s", knownFile, err, out)
				})
				mu.Lock()
				switch {
				case err != nil:
					res.outcome[name], res.output[name] = fail, fmt.Sprintf("%v\n%s", err, out)
				case !ok: // a t.Fatal of the harness itself
					res.outcome[name] = fail
				default:
					res.outcome[name] = pass
				}
				mu.Unlock()
				if err != nil || !ok {
					return // the next steps need this one
				}
			}
		})
	}
}

// tfWorkspace is one group's Terraform working directory.
type tfWorkspace struct {
	tf, dir string
	env     []string
	srv     *server
	org     string
	group   string
}

func newWorkspace(t *testing.T, tf, cliConfig string, srv *server, group string, files []string) *tfWorkspace {
	t.Helper()
	dir := t.TempDir()
	for _, f := range append([]string{"provider.tf"}, files...) {
		b, err := os.ReadFile(filepath.Join("testdata", "terraform", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	org := "harness-" + group
	w := &tfWorkspace{tf: tf, dir: dir, srv: srv, org: org, group: group, env: []string{
		"TF_CLI_CONFIG_FILE=" + cliConfig,
		"SSL_CERT_FILE=" + srv.caFile,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
		"TF_VAR_hostname=" + srv.hostname,
		"TF_VAR_token=" + rootToken,
		"TF_VAR_org=" + org,
	}}
	for _, f := range files {
		if f == "org_given.tf" {
			srv.createOrganization(t, org)
		}
	}
	return w
}

// terraform runs the CLI with args in the working directory.
func (w *tfWorkspace) terraform(t *testing.T, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	switch args[0] {
	case "init", "apply", "plan", "import", "destroy":
		args = append([]string{args[0], "-no-color"}, args[1:]...)
	}
	out, err := command(ctx, w.dir, w.env, w.tf, args...)
	return string(out), err
}

// planClean runs a plan and fails unless it has no changes
// (-detailed-exitcode: 0 no changes, 1 error, 2 changes).
func (w *tfWorkspace) planClean(t *testing.T, changed bool) (string, error) {
	out, err := w.terraform(t, "plan", "-input=false", "-detailed-exitcode", fmt.Sprintf("-var=changed=%v", changed))
	switch code := exitCode(err); code {
	case 0:
		return out, nil
	case 2:
		return out, fmt.Errorf("plan: changes (exit 2), want none")
	default:
		return out, fmt.Errorf("plan: exit %d: %w", code, err)
	}
}

// step is one step of a group.
type step struct {
	name string
	run  func(t *testing.T) (string, error)
}

func (w *tfWorkspace) steps() []step {
	apply := func(changed bool) func(t *testing.T) (string, error) {
		return func(t *testing.T) (string, error) {
			return w.terraform(t, "apply", "-input=false", "-auto-approve", fmt.Sprintf("-var=changed=%v", changed))
		}
	}
	return []step{
		{"init", func(t *testing.T) (string, error) { return w.terraform(t, "init", "-input=false") }},
		{"apply", apply(false)},
		{"plan", func(t *testing.T) (string, error) { return w.planClean(t, false) }},
		{"change", apply(true)},
		{"plan-after-change", func(t *testing.T) (string, error) { return w.planClean(t, true) }},
		{"import", w.reimport},
		{"plan-after-import", func(t *testing.T) (string, error) { return w.planClean(t, true) }},
		{"destroy", func(t *testing.T) (string, error) {
			out, err := w.terraform(t, "destroy", "-input=false", "-auto-approve", "-var=changed=true")
			if err != nil {
				return out, err
			}
			return out, w.checkDestroyed(t)
		}},
	}
}

// stateResource is a resource of `terraform show -json`.
type stateResource struct {
	Address string         `json:"address"`
	Mode    string         `json:"mode"`
	Type    string         `json:"type"`
	Values  map[string]any `json:"values"`
}

// reimport removes every managed resource from the state and imports it
// again by the import ID its type's documentation gives.
func (w *tfWorkspace) reimport(t *testing.T) (string, error) {
	out, err := w.terraform(t, "show", "-json")
	if err != nil {
		return out, err
	}
	var state struct {
		Values struct {
			RootModule struct {
				Resources []stateResource `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &state); err != nil {
		return out, fmt.Errorf("terraform show -json: %w", err)
	}
	all := state.Values.RootModule.Resources
	var addrs, ids []string
	for _, r := range all {
		if r.Mode != "managed" {
			continue
		}
		id, err := importID(r, all)
		if err != nil {
			return out, err
		}
		addrs, ids = append(addrs, r.Address), append(ids, id)
	}
	if len(addrs) == 0 {
		return out, fmt.Errorf("no resources in the state")
	}
	var log strings.Builder
	o, err := w.terraform(t, append([]string{"state", "rm"}, addrs...)...)
	log.WriteString(o)
	if err != nil {
		return log.String(), err
	}
	for i, addr := range addrs {
		o, err := w.terraform(t, "import", "-input=false", "-var=changed=true", addr, ids[i])
		fmt.Fprintf(&log, "$ terraform import %s %s\n%s", addr, ids[i], o)
		if err != nil {
			return log.String(), fmt.Errorf("import %s %s: %w", addr, ids[i], err)
		}
	}
	return log.String(), nil
}

// importID is the ID `terraform import` takes for r, as the provider's
// documentation of each resource gives it.
func importID(r stateResource, all []stateResource) (string, error) {
	str := func(key string) string { s, _ := r.Values[key].(string); return s }
	switch r.Type {
	case "tfe_organization":
		return str("name"), nil
	case "tfe_project", "tfe_workspace", "tfe_team_project_access", "tfe_policy_set":
		return str("id"), nil
	case "tfe_team", "tfe_policy":
		return str("organization") + "/" + str("id"), nil
	case "tfe_project_policy_set": // ORGANIZATION/PROJECT ID/POLICY SET NAME
		for _, ps := range all {
			if ps.Mode == "managed" && ps.Type == "tfe_policy_set" && ps.Values["id"] == r.Values["policy_set_id"] {
				return fmt.Sprintf("%s/%s/%s", ps.Values["organization"], str("project_id"), ps.Values["name"]), nil
			}
		}
		return "", fmt.Errorf("%s: its policy set %v is not in the state", r.Address, r.Values["policy_set_id"])
	}
	return "", fmt.Errorf("%s: no import ID known for type %s", r.Address, r.Type)
}

// checkDestroyed checks through the API that the destroy left nothing: no
// organization when Terraform managed it, else no workspace in it.
func (w *tfWorkspace) checkDestroyed(t *testing.T) error {
	path := "/api/v2/organizations/" + w.org
	managedOrg := true
	if _, err := os.Stat(filepath.Join(w.dir, "org_given.tf")); err == nil {
		path, managedOrg = path+"/workspaces", false
	}
	req, err := http.NewRequest(http.MethodGet, w.srv.url+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+rootToken)
	resp, err := w.srv.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if managedOrg {
		if resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("after destroy, GET %s: status %d, want 404: %s", path, resp.StatusCode, body)
		}
		return nil
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Data) != 0 {
		return fmt.Errorf("after destroy, GET %s: status %d, want 200 and no workspaces: %s", path, resp.StatusCode, body)
	}
	return nil
}
