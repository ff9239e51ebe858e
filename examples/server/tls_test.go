package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// caClient returns an HTTP client that trusts only the CA certificate of
// the PEM file caFile.
func caClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %s", caFile)
	}
	return &http.Client{Timeout: wait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// privateTempDir returns a new temporary directory of mode 0700, which
// devTLS writes into (t.TempDir's are 0777 less the umask).
func privateTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readCert returns the one certificate of the PEM file path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("%s: not one PEM certificate", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDevTLSCertificates(t *testing.T) {
	dir := privateTempDir(t)
	now := time.Now()
	if err := devTLS(dir, []string{"keel.example", "10.1.2.3", "127.0.0.1"}, now); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, filepath.Join(dir, devCAFile))
	cert := readCert(t, filepath.Join(dir, devCertFile))
	if !ca.IsCA || ca.MaxPathLen != 0 || !ca.MaxPathLenZero {
		t.Errorf("CA: IsCA %v, MaxPathLen %d", ca.IsCA, ca.MaxPathLen)
	}
	if cert.IsCA {
		t.Error("the server certificate is a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "keel.example", "10.1.2.3"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if len(cert.IPAddresses) != 3 { // 127.0.0.1 once, ::1, 10.1.2.3
		t.Errorf("IP SANs %v", cert.IPAddresses)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("the certificate verifies for a name it does not hold")
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots, CurrentTime: now.Add(devTLSValidity + time.Hour)}); err == nil {
		t.Error("the certificate verifies after its validity")
	}
	// The key is the owner's only, and the CA's key is not written.
	fi, err := os.Stat(filepath.Join(dir, devKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("dir holds %d files, want ca.pem, cert.pem and key.pem", len(entries))
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, devCertFile), filepath.Join(dir, devKeyFile)); err != nil {
		t.Errorf("certificate and key do not pair: %v", err)
	}
}

func TestDevTLSHosts(t *testing.T) {
	got := devTLSHosts("0.0.0.0:8200", "[::]:8200", ":8200", "10.0.0.5:8200", "keel.internal:8300", "bad")
	want := []string{"10.0.0.5", "keel.internal"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("devTLSHosts = %v, want %v", got, want)
	}
}

func TestTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tls-cert", "c.pem"}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-key", "k.pem"}, "-tls-cert and -tls-key go together"},
		{[]string{"-dev-tls", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, "-dev-tls and -tls-cert exclude each other"},
		{[]string{"-dev-tls-dir", t.TempDir()}, "-dev-tls-dir needs -dev-tls"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"-data", "memory"}, tc.args...), &stderr)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(stderr.String(), "Usage: server") {
			t.Errorf("%v: %v, stderr %q; want a usageError %q and the usage", tc.args, err, &stderr, tc.want)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, f := range []string{"-tls-cert", "-tls-key", "-dev-tls", "-dev-tls-dir"} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("usage does not name %s", f)
		}
	}

	// Files that are missing or do not pair fail the start, naming them.
	dir := privateTempDir(t)
	if err := devTLS(dir, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cert, key, want string
	}{
		{filepath.Join(dir, "missing.pem"), filepath.Join(dir, devKeyFile), "missing.pem"},
		{filepath.Join(dir, devCAFile), filepath.Join(dir, devKeyFile), "private key does not match"},
	} {
		stderr.Reset()
		err := run(context.Background(), []string{"-data", "memory", "-addr", "127.0.0.1:0", "-tls-cert", tc.cert, "-tls-key", tc.key}, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-tls-cert %s -tls-key %s: %v, want an error containing %q", tc.cert, tc.key, err, tc.want)
		}
	}
}

// devTLSRE is the line -dev-tls prints.
var devTLSRE = regexp.MustCompile(`(?m)^Dev TLS CA: (.+)$`)

// startTLS starts a server with args and returns it with its URL in https
// and a client that trusts caFile (read after the start; empty: the CA
// file the server printed).
func startTLS(t *testing.T, caFile string, args ...string) (*testServer, *http.Client) {
	t.Helper()
	ts := start(t, hooks{}, args...)
	ts.url = "https://" + strings.TrimPrefix(ts.url, "http://")
	if caFile == "" {
		m := devTLSRE.FindStringSubmatch(ts.stderr.String())
		if m == nil {
			t.Fatalf("no %q line in stderr:\n%s", "Dev TLS CA: ", ts.stderr)
		}
		caFile = m[1]
	}
	return ts, caClient(t, caFile)
}

// getJSON requests url with client and decodes the JSON body into out; it
// returns the status.
func getJSON(t *testing.T, client *http.Client, url, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, body)
		}
	}
	return resp.StatusCode
}

func TestDevTLSServer(t *testing.T) {
	ts, client := startTLS(t, "", "-data", "memory", "-dev-tls", "-root-token", "root")
	caFile := devTLSRE.FindStringSubmatch(ts.stderr.String())[1]
	if !strings.Contains(ts.stderr.String(), "tls=true") {
		t.Errorf("the listening line does not say tls=true:\n%s", ts.stderr)
	}

	// Discovery, without a token, over TLS, by the name the certificate
	// holds besides the address.
	var doc map[string]string
	localhost := strings.Replace(ts.url, "127.0.0.1", "localhost", 1)
	if status := getJSON(t, client, localhost+"/.well-known/terraform.json", "", &doc); status != http.StatusOK {
		t.Fatalf("discovery: status %d", status)
	}
	want := map[string]string{"tfe.v2": "/api/v2/", "tfe.v2.1": "/api/v2/", "tfe.v2.2": "/api/v2/"}
	if !maps.Equal(doc, want) {
		t.Fatalf("discovery document %v, want %v", doc, want)
	}

	// The tfe adapter over TLS: pagination links are https URLs.
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/api/v2/organizations",
		strings.NewReader(`{"data":{"type":"organizations","attributes":{"name":"acme","email":"a@example.com"}}}`))
	req.Header.Set("Authorization", "Bearer root")
	req.Header.Set("Content-Type", "application/vnd.api+json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create organization: status %d", resp.StatusCode)
	}
	var list struct {
		Links map[string]*string `json:"links"`
	}
	if status := getJSON(t, client, ts.url+"/api/v2/organizations/acme/projects", "root", &list); status != http.StatusOK {
		t.Fatalf("list projects: status %d", status)
	}
	if list.Links["self"] == nil {
		t.Errorf("no links.self: %v", list.Links)
	}
	for name, link := range list.Links {
		if link != nil && !strings.HasPrefix(*link, ts.url+"/api/v2/organizations/acme/projects?") {
			t.Errorf("links.%s = %s, want under %s", name, *link, ts.url)
		}
	}

	// Plain HTTP to the TLS port is refused, and a client that does not
	// trust the CA fails the handshake.
	resp, err = client.Get("http://" + strings.TrimPrefix(ts.url, "https://") + "/v1/sys/health")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: status %d, want 400", resp.StatusCode)
		}
	}
	if resp, err := (&http.Client{Timeout: wait}).Get(ts.url + "/v1/sys/health"); err == nil {
		resp.Body.Close()
		t.Error("a client without the CA got an answer")
	}

	// The temporary directory goes with the server.
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(caFile)); !os.IsNotExist(err) {
		t.Errorf("the dev TLS directory is still there after stop: %v", err)
	}
}

func TestDevTLSDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	ts, client := startTLS(t, filepath.Join(dir, devCAFile), "-data", "memory", "-dev-tls", "-dev-tls-dir", dir)
	if !strings.Contains(ts.stderr.String(), "Dev TLS CA: "+filepath.Join(dir, devCAFile)+"\n") {
		t.Errorf("stderr does not name the CA file:\n%s", ts.stderr)
	}
	if status := getJSON(t, client, ts.url+"/v1/sys/health", "", nil); status != http.StatusOK {
		t.Fatalf("health: status %d", status)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	// A directory given is the caller's: it stays.
	if _, err := os.Stat(filepath.Join(dir, devCAFile)); err != nil {
		t.Errorf("the CA file is gone after stop: %v", err)
	}
}

func TestTLSCertAndKey(t *testing.T) {
	dir := privateTempDir(t)
	if err := devTLS(dir, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	ts, client := startTLS(t, filepath.Join(dir, devCAFile), "-data", "memory",
		"-tls-cert", filepath.Join(dir, devCertFile), "-tls-key", filepath.Join(dir, devKeyFile))
	if devTLSRE.MatchString(ts.stderr.String()) {
		t.Errorf("a server with -tls-cert printed a dev CA:\n%s", ts.stderr)
	}
	var doc map[string]string
	if status := getJSON(t, client, ts.url+"/.well-known/terraform.json", "", &doc); status != http.StatusOK || doc["tfe.v2.2"] != "/api/v2/" {
		t.Fatalf("discovery: status %d, %v", status, doc)
	}
}
