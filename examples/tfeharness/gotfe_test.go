package tfeharness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// goTFEModule is the Go client of HCP Terraform's API; its version is the
// one keel's examples module requires (the one the tfe adapter's tests
// use).
const goTFEModule = "github.com/hashicorp/go-tfe"

// goTFEFiles are go-tfe's integration test files that TestGoTFE runs.
var goTFEFiles = []string{
	"organization_integration_test.go",
	"projects_integration_test.go",
	"workspace_integration_test.go",
	"team_integration_test.go",
	"team_project_access_integration_test.go",
	"policy_integration_test.go",
}

// goTFETimeout bounds one top-level go-tfe test (its own -test.timeout).
// go-tfe's retry helpers wait up to 30 s, or 120 s "patiently", for a
// state a server never reaches.
const goTFETimeout = 60 * time.Second

// testFuncRE finds the top-level tests of a test file.
var testFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// buildGoTFE copies go-tfe's module, as keel's examples module requires it,
// out of
// the module cache (downloading it if needed) into workDir, compiles its
// tests there as they are, once per run, and returns the test binary, the
// copy's directory (where the tests run: they read test-fixtures) and the
// top-level tests of goTFEFiles.
var buildGoTFE = sync.OnceValues(func() (*goTFE, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	examples, err := examplesModule()
	if err != nil {
		return nil, err
	}
	out, err := command(ctx, examples, goEnv, "go", "list", "-m", "-f", "{{.Version}}", goTFEModule)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	version := strings.TrimSpace(string(out))
	// Outside any module, so that nothing's go.mod or go.sum changes.
	out, err = command(ctx, workDir, append([]string{"GO111MODULE=on"}, goEnv...), "go", "mod", "download", "-json", goTFEModule+"@"+version)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download %s@%s: %v %s: %s", goTFEModule, version, err, mod.Error, out)
	}
	g := &goTFE{version: version, dir: filepath.Join(workDir, "go-tfe@"+version), bin: filepath.Join(workDir, "go-tfe.test")}
	// The module cache is read-only; the copy is not, so that go can
	// write there (nothing else does).
	if err := os.CopyFS(g.dir, os.DirFS(mod.Dir)); err != nil {
		return nil, err
	}
	start := time.Now()
	if out, err := command(ctx, g.dir, goEnv, "go", "test", "-c", "-trimpath", "-o", g.bin, "."); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "tfeharness: compiled go-tfe %s's tests in %v\n", version, time.Since(start).Round(100*time.Millisecond))
	for _, f := range goTFEFiles {
		b, err := os.ReadFile(filepath.Join(g.dir, f))
		if err != nil {
			return nil, err
		}
		for _, m := range testFuncRE.FindAllSubmatch(b, -1) {
			g.tests = append(g.tests, string(m[1]))
		}
	}
	return g, nil
})

// goTFE is go-tfe's compiled test binary.
type goTFE struct {
	version, dir, bin string
	tests             []string // top-level tests of goTFEFiles
}

// testEvent is an event of go test -json (test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// TestGoTFE runs go-tfe's integration tests of goTFEFiles, unmodified,
// against the example server as a Terraform Enterprise (ENABLE_TFE=1),
// each top-level test in a process of its own, and compares every test's
// outcome with KNOWN-FAILURES.md ("go-tfe/TEST/SUBTEST"). A test that
// failed only because subtests failed is not listed itself; a test that
// ran but never ended (a panic elsewhere in its process, a timeout) is
// counted as failed.
//
// TFEHARNESS_GOTFE_RUN, a regular expression, narrows the top-level tests.
func TestGoTFE(t *testing.T) {
	t.Parallel()
	g, err := buildGoTFE()
	if err != nil {
		t.Fatalf("building go-tfe's tests: %v", err)
	}
	tests := g.tests
	if re := os.Getenv("TFEHARNESS_GOTFE_RUN"); re != "" {
		rx, err := regexp.Compile(re)
		if err != nil {
			t.Fatalf("TFEHARNESS_GOTFE_RUN: %v", err)
		}
		tests = slices.DeleteFunc(slices.Clone(tests), func(name string) bool { return !rx.MatchString(name) })
	}
	srv := startServer(t)
	env := []string{"ENABLE_TFE=1", "TFE_ADDRESS=" + srv.url, "TFE_TOKEN=" + rootToken, "SSL_CERT_FILE=" + srv.caFile}

	res := results{outcome: map[string]string{}, output: map[string]string{}}
	ranTop := map[string]bool{}
	for _, name := range tests {
		ranTop[name] = true
	}
	res.ran = func(name string) bool {
		top, _, _ := strings.Cut(strings.TrimPrefix(name, "go-tfe/"), "/")
		return ranTop[top]
	}

	// Two processes at a time: the server and the tests share two cores.
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for name := range work {
				outcome, output := runGoTFETest(g, env, name)
				mu.Lock()
				for k, v := range outcome {
					res.outcome["go-tfe/"+k] = v
					res.output["go-tfe/"+k] = output[k]
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for _, name := range tests {
		work <- name
	}
	close(work)
	wg.Wait()

	counts := map[string]int{}
	topCounts := map[string]int{}
	for name, oc := range res.outcome {
		counts[oc]++
		if !strings.Contains(strings.TrimPrefix(name, "go-tfe/"), "/") {
			topCounts[oc]++
		}
	}
	t.Logf("go-tfe %s: %d top-level tests in %v; listed tests (own outcomes): %d pass, %d fail, %d skip; of them top-level: %d pass, %d fail, %d skip",
		g.version, len(tests), time.Since(start).Round(100*time.Millisecond),
		counts[pass], counts[fail], counts[skip], topCounts[pass], topCounts[fail], topCounts[skip])
	checkKnown(t, "go-tfe/", res)
}

// runGoTFETest runs the top-level test name of go-tfe's binary under
// test2json and returns the outcome and output of each of its tests that
// counts (see TestGoTFE).
func runGoTFETest(g *goTFE, env []string, name string) (outcome, output map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), goTFETimeout+30*time.Second)
	defer cancel()
	out, runErr := command(ctx, g.dir, env, "go", "tool", "test2json", "-t", "--", g.bin,
		"-test.v=test2json", "-test.run", "^"+name+"$", "-test.count=1", "-test.timeout", goTFETimeout.String())
	outcome, output = map[string]string{}, map[string]string{}
	started := map[string]bool{}
	var pkgOutput strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			pkgOutput.WriteString(sc.Text() + "\n") // the error of a command that did not run
			continue
		}
		switch {
		case ev.Test == "":
			if ev.Action == "output" {
				pkgOutput.WriteString(ev.Output)
			}
		case ev.Action == "run":
			started[ev.Test] = true
		case ev.Action == "output":
			output[ev.Test] += ev.Output
		case ev.Action == pass, ev.Action == fail, ev.Action == skip:
			outcome[ev.Test] = ev.Action
		}
	}
	if len(started) == 0 {
		outcome[name], output[name] = fail, fmt.Sprintf("did not run: %v\n%s", runErr, pkgOutput.String())
		return outcome, output
	}
	// Tests that started and never ended: a panic, or the timeout.
	for test := range started {
		if _, ok := outcome[test]; !ok {
			outcome[test] = fail
			output[test] += "(never ended: the process stopped)\n" + pkgOutput.String()
		}
	}
	// A failure is a test's own only when none of its subtests failed.
	for test, oc := range outcome {
		if oc != fail {
			continue
		}
		for other, ooc := range outcome {
			if ooc == fail && strings.HasPrefix(other, test+"/") {
				delete(outcome, test)
				break
			}
		}
	}
	// A panic's report is in the package's output: give it to the
	// failures, which it may explain.
	if p := pkgOutput.String(); strings.Contains(p, "panic:") {
		for test, oc := range outcome {
			if oc == fail && !strings.Contains(output[test], "never ended") {
				output[test] += p
			}
		}
	}
	return outcome, output
}
