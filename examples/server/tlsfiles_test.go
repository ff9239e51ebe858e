package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// skipWithoutModes skips tests of permission bits where they do not say
// who may read a file.
func skipWithoutModes(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("permission bits do not describe access on Windows (ACLs do): writePrivateFiles skips its mode checks there")
	}
}

// writeMode writes data into path and sets its mode to perm, whatever the
// umask.
func writeMode(t *testing.T, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// mkdirMode makes the directory path of mode perm, whatever the umask.
func mkdirMode(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// tree returns the entries of dir, each as its name, mode and contents (or
// link target), in name order: what a refused start must leave unchanged.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		var content string
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			content, err = os.Readlink(p)
		case fi.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			content = string(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+" "+fi.Mode().String()+" "+content)
	}
	return out
}

func TestDevTLSDirRefused(t *testing.T) {
	skipWithoutModes(t)
	for name, tc := range map[string]struct {
		// setup makes what the start is given in base and returns the
		// -dev-tls-dir value and the text the error must hold besides
		// -dev-tls-dir.
		setup func(t *testing.T, base string) (dir string, want []string)
	}{
		"key 0644": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o700)
			writeMode(t, filepath.Join(dir, devKeyFile), "old key", 0o644)
			return dir, []string{filepath.Join(dir, devKeyFile), "mode 0644"}
		}},
		"ca 0644": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o700)
			writeMode(t, filepath.Join(dir, devCAFile), "old ca", 0o644)
			writeMode(t, filepath.Join(dir, devKeyFile), "old key", 0o600)
			return dir, []string{filepath.Join(dir, devCAFile), "mode 0644"}
		}},
		"key symlink": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o700)
			writeMode(t, filepath.Join(base, "victim"), "not a key", 0o600)
			if err := os.Symlink(filepath.Join(base, "victim"), filepath.Join(dir, devKeyFile)); err != nil {
				t.Fatal(err)
			}
			return dir, []string{filepath.Join(dir, devKeyFile), "symbolic link"}
		}},
		"key dangling symlink": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o700)
			if err := os.Symlink(filepath.Join(base, "new"), filepath.Join(dir, devKeyFile)); err != nil {
				t.Fatal(err)
			}
			return dir, []string{filepath.Join(dir, devKeyFile), "symbolic link"}
		}},
		"key directory": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o700)
			mkdirMode(t, filepath.Join(dir, devKeyFile), 0o700)
			return dir, []string{filepath.Join(dir, devKeyFile), "not a regular file"}
		}},
		"dir symlink": {func(t *testing.T, base string) (string, []string) {
			mkdirMode(t, filepath.Join(base, "real"), 0o700)
			if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "tls")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "tls"), []string{filepath.Join(base, "tls"), "symbolic link"}
		}},
		"dir symlink with slash": {func(t *testing.T, base string) (string, []string) {
			mkdirMode(t, filepath.Join(base, "real"), 0o700)
			if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "tls")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "tls") + "/", []string{filepath.Join(base, "tls"), "symbolic link"}
		}},
		"dir 0755": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o755)
			return dir, []string{dir, "mode 0755"}
		}},
		"dir 0701": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			mkdirMode(t, dir, 0o701)
			return dir, []string{dir, "mode 0701"}
		}},
		"dir a file": {func(t *testing.T, base string) (string, []string) {
			dir := filepath.Join(base, "tls")
			writeMode(t, dir, "", 0o600)
			return dir, []string{dir, "not a directory"}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			dir, want := tc.setup(t, base)
			before := tree(t, base)
			var inside []string
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				inside = tree(t, dir)
			}
			// A server that starts all the same is stopped at once.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := false
			var stderr bytes.Buffer
			err := serve(ctx, []string{"-data", "memory", "-addr", "127.0.0.1:0", "-dev-tls", "-dev-tls-dir", dir}, &stderr,
				hooks{ready: func(string) { started = true; cancel() }})
			if started || err == nil {
				t.Fatalf("the server started (%v); stderr:\n%s", err, &stderr)
			}
			for _, w := range append([]string{"-dev-tls-dir"}, want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
			// Nothing is written: not the files, not through a link, not
			// a temporary file.
			if after := tree(t, base); !slices.Equal(after, before) {
				t.Errorf("%s changed:\nbefore %q\nafter  %q", base, before, after)
			}
			if inside != nil {
				if after := tree(t, dir); !slices.Equal(after, inside) {
					t.Errorf("%s changed:\nbefore %q\nafter  %q", dir, inside, after)
				}
			}
		})
	}
}

// checkDevTLSModes fails t unless dir is a directory of mode 0700 holding
// only the files of -dev-tls, each a regular file of mode 0600.
func checkDevTLSModes(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want a directory of mode 0700", dir, fi.Mode())
	}
	var names []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{devCAFile, devCertFile, devKeyFile}; !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want %q", dir, names, want)
	}
	for _, name := range names {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a regular file of mode 0600", name, fi.Mode())
		}
	}
}

func TestDevTLSDirModes(t *testing.T) {
	skipWithoutModes(t)
	dir := filepath.Join(t.TempDir(), "new", "tls")
	caFile := filepath.Join(dir, devCAFile)
	ts, client := startTLS(t, caFile, "-data", "memory", "-dev-tls", "-dev-tls-dir", dir)
	if status := getJSON(t, client, ts.url+"/v1/sys/health", "", nil); status != http.StatusOK {
		t.Fatalf("health: status %d", status)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	checkDevTLSModes(t, dir)
	first, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}

	// A second start over the same directory replaces the files, which
	// pass the checks, with a new CA's.
	ts, client = startTLS(t, caFile, "-data", "memory", "-dev-tls", "-dev-tls-dir", dir)
	if status := getJSON(t, client, ts.url+"/v1/sys/health", "", nil); status != http.StatusOK {
		t.Fatalf("health after a restart: status %d", status)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	checkDevTLSModes(t, dir)
	if second, err := os.ReadFile(caFile); err != nil || bytes.Equal(second, first) {
		t.Errorf("the second start did not write a new CA (%v)", err)
	}
}

func TestDevTLSTempDirModes(t *testing.T) {
	skipWithoutModes(t)
	ts, _ := startTLS(t, "", "-data", "memory", "-dev-tls")
	checkDevTLSModes(t, filepath.Dir(devTLSRE.FindStringSubmatch(ts.stderr.String())[1]))
}
