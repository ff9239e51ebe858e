package tfeharness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// rootToken is the example server's -root-token in these tests.
const rootToken = "keel-harness-root-token"

// waitBound bounds the waits for the example server: keel's
// keeltest.WaitBound, which this module cannot import.
const waitBound = 2 * time.Minute

// workDir holds what the tests build (the server, the provider's mirror,
// go-tfe's copy): one directory for the whole run, removed at its end.
var workDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "tfeharness-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// examplesModule returns the directory of keel's examples module, which
// this module lies in.
func examplesModule() (string, error) {
	dir, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	if !bytes.HasPrefix(b, []byte("module github.com/keelhq/keel/examples\n")) {
		return "", fmt.Errorf("%s is not keel's examples module", dir)
	}
	return dir, nil
}

// command runs name with args in dir and returns its combined output and
// an error naming the command when it fails (its exit code, see
// exitCode). env is added to a cleaned environment (see baseEnv).
func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	cmd.WaitDelay = 5 * time.Second
	setDeathSignal(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out, nil
}

// baseEnv is the environment of the tools: this process's, without what
// would point them elsewhere than the test's server and files.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "TF_"), strings.HasPrefix(name, "TFE_"),
			name == "ENABLE_TFE", name == "ENABLE_BETA", name == "SSL_CERT_FILE", name == "SSL_CERT_DIR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// goEnv is the environment of the go commands that build: GOFLAGS of the
// caller (-count, -run) are not theirs, and each module stands alone, as
// this one does (keel's go.work at the root does not list it).
var goEnv = []string{"GOFLAGS=-buildvcs=false", "GOWORK=off"}

// buildServer builds the example server of the enclosing examples module
// (over the library of the same tree: its replace), once per run.
var buildServer = sync.OnceValues(func() (string, error) {
	examples, err := examplesModule()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(workDir, "keel-server")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := command(ctx, examples, goEnv, "go", "build", "-o", bin, "./server"); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
})

// server is a running example server.
type server struct {
	hostname string // localhost:PORT, what Terraform's provider is given
	url      string // https://localhost:PORT
	caFile   string // the -dev-tls CA
	client   *http.Client
}

// listeningRE finds the address in the server's "listening" log line.
var listeningRE = regexp.MustCompile(`msg=listening addr=127\.0\.0\.1:(\d+) tls=true`)

// startServer builds (once) and starts the example server over a new
// bbolt file with -dev-tls and the root token rootToken; it stops at the
// end of the test. Its log goes to the test's log when the test fails.
func startServer(t *testing.T) *server {
	t.Helper()
	bin, err := buildServer()
	if err != nil {
		t.Fatalf("building the example server: %v", err)
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "keel.db"),
		"-dev-tls", "-dev-tls-dir", tlsDir, "-root-token", rootToken)
	cmd.Env = baseEnv()
	setDeathSignal(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	port := make(chan string, 1)
	copied := make(chan struct{})
	go func() { // ends when the server exits and closes its stderr
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				port <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { <-copied; done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("example server: %v", err)
			}
		case <-time.After(waitBound):
			cmd.Process.Kill()
			<-done
			t.Errorf("example server did not stop within %v", waitBound)
		}
		if t.Failed() {
			t.Logf("example server's log (its last %d lines):\n%s", serverLogLines, lastLines(log.String(), serverLogLines))
		}
	})
	var p string
	select {
	case p = <-port:
	case <-copied:
		t.Fatalf("example server exited:\n%s", log.String())
	case <-time.After(waitBound):
		t.Fatalf("example server did not listen within %v:\n%s", waitBound, log.String())
	}
	s := &server{hostname: "localhost:" + p, url: "https://localhost:" + p, caFile: filepath.Join(tlsDir, "ca.pem")}
	pemBytes, err := os.ReadFile(s.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return s
}

// createOrganization creates the organization name through the API, as
// the root token.
func (s *server) createOrganization(t *testing.T, name string) {
	t.Helper()
	body := fmt.Sprintf(`{"data":{"type":"organizations","attributes":{"name":%q,"email":"admin@example.com"}}}`, name)
	req, err := http.NewRequest(http.MethodPost, s.url+"/api/v2/organizations", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rootToken)
	req.Header.Set("Content-Type", "application/vnd.api+json")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create organization %s: status %d: %s", name, resp.StatusCode, b)
	}
}

// serverLogLines is how much of the server's log a failed test shows.
const serverLogLines = 60

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) WriteString(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(str)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exitCode returns the exit status of a command's error: 0 for nil, -1
// when it did not exit (not started, killed).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
