package workspace_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// race is whether this test runs with the race detector (race_test.go).
var race bool

// forwarded are the flags of go test, from this run's command line, that
// TestModules gives the other modules' go test.
var forwarded []string

// testFlags are the flags of go test (test.NAME of the test binary) that
// TestModules forwards when the command line set them.
var testFlags = map[string]bool{
	"run": true, "skip": true, "bench": true, "benchtime": true, "benchmem": true,
	"count": true, "cpu": true, "failfast": true, "short": true, "shuffle": true,
	"fullpath": true, "parallel": true,
}

// TestMain keeps this run's flags for TestModules and makes TestModules its
// only test, whatever -run says: go test -run X ./... runs X in the other
// modules too.
func TestMain(m *testing.M) {
	flag.Parse()
	timeout := ""
	flag.Visit(func(f *flag.Flag) {
		name, ok := strings.CutPrefix(f.Name, "test.")
		switch {
		case !ok:
		case testFlags[name]:
			forwarded = append(forwarded, "-"+name+"="+f.Value.String())
		case name == "v" && f.Value.String() == "true":
			forwarded = append(forwarded, "-v")
		case name == "timeout":
			timeout = f.Value.String()
		}
	})
	if race {
		forwarded = append(forwarded, "-race")
	}
	// -timeout bounds each test binary of the other modules, as it bounds
	// each of this module's; not this one, which waits for all of them (the
	// go command still kills it a minute after -timeout).
	if timeout != "" {
		forwarded = append(forwarded, "-timeout="+timeout)
	}
	for name, value := range map[string]string{"test.run": "^TestModules$", "test.skip": "", "test.bench": "", "test.timeout": "0"} {
		if err := flag.Set(name, value); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// TestModules runs go test ./... in every module of the workspace but the
// library's, one after the other, with the forwarded flags.
func TestModules(t *testing.T) {
	root := realPath(t, filepath.Join("..", ".."))
	gowork := goOutput(t, root, "env", "GOWORK")
	if gowork == "" || gowork == "off" || realPath(t, gowork) != filepath.Join(root, "go.work") {
		t.Skipf("not in keel's workspace (GOWORK=%q): go test the modules of examples/ and bench/ from their directories", gowork)
	}
	var dirs []string
	for _, dir := range strings.Split(goOutput(t, root, "list", "-m", "-f", "{{.Dir}}"), "\n") {
		if realPath(t, dir) != root {
			dirs = append(dirs, dir)
		}
	}
	recordInputs(t, root)
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			// One test binary at a time (-p=1): the go command that runs
			// this one runs the library's beside it.
			args := append(append([]string{"test", "-p=1"}, forwarded...), "./...")
			cmd := exec.Command("go", args...)
			cmd.Dir = dir
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			setDeathSignal(cmd)
			if err := cmd.Run(); err != nil {
				t.Errorf("go %s in %s: %v", strings.Join(args, " "), rel, err)
			}
		})
	}
}

// realPath returns the absolute path of path with no symbolic links, or
// fails t.
func realPath(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// goOutput returns the trimmed output of the go command run in dir, or
// fails t.
func goOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// recordInputs stats every file of the repository but .git's, so that go
// test's cache reuses this package's result only while none has changed
// (the go command remembers the files a test opens or stats, and the
// other modules' tests, which read them, run in processes of their own).
func recordInputs(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the other modules' tests read from the environment.
	for _, name := range []string{"PATH", "GOFLAGS", "KEEL_ETCD_ENDPOINTS", "KEEL_ETCD_BINARY"} {
		os.Getenv(name)
	}
}
