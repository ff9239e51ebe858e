// Package slapdtest starts a throwaway OpenLDAP slapd for tests: its own
// temporary directory and cn=config, an mdb database for dc=example,dc=org
// with an admin (the rootDN), a non-root bind account cn=keel that the ACLs
// let write passwords, and users alice and bob, on a free port of
// 127.0.0.1. It needs Debian's slapd (/usr/sbin/slapd); without it, Start
// skips the test. With the option WithTLS, slapd also offers StartTLS with
// a certificate of a throwaway CA.
package slapdtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// The directory tree of a Server.
const (
	Suffix   = "dc=example,dc=org"
	AdminDN  = "cn=admin," + Suffix
	AdminPW  = "admin-secret"
	BindDN   = "cn=keel," + Suffix
	BindPW   = "keel-bind-pw"
	UsersDN  = "ou=users," + Suffix
	AliceDN  = "uid=alice," + UsersDN
	BobDN    = "uid=bob," + UsersDN
	AlicePW  = "alice-secret"
	BobPW    = "bob-secret"
	slapdBin = "/usr/sbin/slapd"
)

// Server is a running slapd.
type Server struct {
	URL    string // ldap://127.0.0.1:PORT
	Dir    string
	CAPEM  string // with WithTLS: the PEM certificate of the CA that signed slapd's
	cmd    *exec.Cmd
	args   []string
	tb     testing.TB
	exited chan struct{}
	paused bool // stopped with SIGSTOP by Pause
}

// An Option changes the slapd that Start starts.
type Option func(*options)

type options struct {
	tls bool
}

// WithTLS makes a throwaway CA (EC P-256) and a server certificate it signs
// for IP:127.0.0.1 and DNS:localhost, and configures slapd with them
// (olcTLSCACertificateFile, olcTLSCertificateFile,
// olcTLSCertificateKeyFile), so that it offers StartTLS. Server.CAPEM holds
// the CA's certificate.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// Start starts a slapd for tb, stopped in tb.Cleanup, or skips tb when
// slapd is not installed.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if _, err := os.Stat(slapdBin); err != nil {
		tb.Skipf("slapd not installed (%s missing): apt-get install slapd ldap-utils to run this test", slapdBin)
	}
	dir, err := os.MkdirTemp("", "slapd")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(filepath.Join(dir, "slapd.d"), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		tb.Fatal(err)
	}
	hash := func(pw string) string {
		out, err := exec.Command("/usr/sbin/slappasswd", "-h", "{SSHA}", "-s", pw).Output()
		if err != nil {
			tb.Fatalf("slappasswd: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	adminHash := hash(AdminPW)
	tlsConfig, caPEM := "", ""
	if o.tls {
		tlsConfig, caPEM = makeCerts(tb, dir)
	}
	config := fmt.Sprintf(configLDIF, dir, adminHash, Suffix, AdminDN, BindDN, tlsConfig)
	data := fmt.Sprintf(dataLDIF, Suffix, AdminDN, adminHash, BindDN, hash(BindPW), UsersDN,
		AliceDN, hash(AlicePW), BobDN, hash(BobPW))
	for _, f := range []struct{ name, text string }{{"config.ldif", config}, {"data.ldif", data}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-n0", "-F", filepath.Join(dir, "slapd.d"), "-l", filepath.Join(dir, "config.ldif")},
		{"-q", "-n1", "-F", filepath.Join(dir, "slapd.d"), "-l", filepath.Join(dir, "data.ldif")},
	} {
		if out, err := exec.Command("/usr/sbin/slapadd", args...).CombinedOutput(); err != nil {
			tb.Fatalf("slapadd %v: %v\n%s", args, err, out)
		}
	}
	s := &Server{Dir: dir, CAPEM: caPEM, tb: tb}
	port := freePort(tb)
	s.URL = fmt.Sprintf("ldap://127.0.0.1:%d", port)
	ldapi := "ldapi://" + strings.ReplaceAll(filepath.Join(dir, "ldapi"), "/", "%2F")
	s.args = []string{"-d", "none", "-h", s.URL + "/ " + ldapi, "-F", filepath.Join(dir, "slapd.d")}
	s.Restart()
	tb.Cleanup(s.Stop)
	return s
}

// makeCerts writes ca.pem, server.pem and server.key to dir and returns the
// TLS attributes of cn=config that name them, and the CA's PEM.
func makeCerts(tb testing.TB, dir string) (config, caPEM string) {
	tb.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		return k
	}
	caKey, srvKey := newKey(), newKey()
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "slapdtest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		tb.Fatal(err)
	}
	caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	files := []struct{ name, text string }{
		{"ca.pem", caPEM},
		{"server.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}))},
		{"server.key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	config = fmt.Sprintf("olcTLSCACertificateFile: %[1]s/ca.pem\nolcTLSCertificateFile: %[1]s/server.pem\nolcTLSCertificateKeyFile: %[1]s/server.key\n", dir)
	return config, caPEM
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Restart starts slapd again after Stop (Start calls it the first time)
// and waits until it answers on its private ldapi socket.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.cmd != nil {
		return
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "slapd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(slapdBin, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		s.tb.Fatal(err)
	}
	s.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	sock := filepath.Join(s.Dir, "ldapi")
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.Dir, "slapd.log"))
			s.tb.Fatalf("slapd exited during startup:\n%s", log)
		default:
		}
		if c, err := ldap.DialURL("ldapi://" + strings.ReplaceAll(sock, "/", "%2F")); err == nil {
			err = c.Bind(AdminDN, AdminPW)
			c.Close()
			if err == nil {
				s.exited = exited
				return
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatal("slapd did not answer within 15s")
		}
		time.Sleep(20 * time.Millisecond) // bounded readiness polling
	}
}

// Stop stops slapd and waits for it to exit; it does nothing when slapd
// does not run. A paused slapd is resumed first, so that no stopped
// process is ever left behind.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.Resume()
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Pause freezes slapd with SIGSTOP, as a server that hangs: the kernel
// still accepts TCP connections on its port (up to the listen backlog),
// but nothing is read or answered until Resume. It does nothing when
// slapd does not run or is paused already. Stop (and so the cleanup of
// Start) resumes a paused slapd before killing it.
func (s *Server) Pause() {
	s.tb.Helper()
	if s.cmd == nil || s.paused {
		return
	}
	if err := s.cmd.Process.Signal(sigStop); err != nil {
		s.tb.Fatalf("slapdtest: pause: %v", err)
	}
	s.paused = true
	// The signal is delivered asynchronously: wait until the kernel shows
	// the process stopped, where /proc tells.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, ok := procState(s.cmd.Process.Pid)
		if !ok || st == 'T' {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("slapdtest: slapd not stopped 5s after SIGSTOP (state %c)", st)
		}
		time.Sleep(time.Millisecond) // bounded polling of another process
	}
}

// procState returns the state letter of process pid in /proc/PID/stat,
// and false where there is no such file.
func procState(pid int) (byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// Resume lets a paused slapd run again (SIGCONT). It does nothing when
// slapd is not paused.
func (s *Server) Resume() {
	s.tb.Helper()
	if s.cmd == nil || !s.paused {
		return
	}
	if err := s.cmd.Process.Signal(sigCont); err != nil {
		s.tb.Errorf("slapdtest: resume: %v", err)
	}
	s.paused = false
}

// Kill ends slapd abruptly with SIGKILL, as a crash (also when paused),
// and waits for it to exit. Its data stays: Restart starts it again on
// the same port with the same database. It does nothing when slapd does
// not run.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.paused = nil, false
}

// Pid returns the process id of the running slapd, or 0 when it does not
// run.
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

const configLDIF = `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: %[1]s/slapd.pid
%[6]s
dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif
include: file:///etc/ldap/schema/cosine.ldif
include: file:///etc/ldap/schema/nis.ldif
include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcPasswordHash: {SSHA}

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcRootDN: cn=config
olcRootPW: %[2]s

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcDbDirectory: %[1]s/data
olcSuffix: %[3]s
olcRootDN: %[4]s
olcRootPW: %[2]s
olcDbMaxSize: 67108864
olcDbIndex: objectClass eq
olcDbIndex: uid,cn eq
olcAccess: {0}to attrs=userPassword by self write by dn.exact="%[4]s" write by dn.exact="%[5]s" write by anonymous auth by * none
olcAccess: {1}to * by dn.exact="%[4]s" write by dn.exact="%[5]s" write by users read by * none
`

const dataLDIF = `dn: %[1]s
objectClass: dcObject
objectClass: organization
dc: example
o: Example Org

dn: %[2]s
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: admin
userPassword: %[3]s

dn: %[4]s
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: keel
userPassword: %[5]s

dn: %[6]s
objectClass: organizationalUnit
ou: users

dn: %[7]s
objectClass: inetOrgPerson
uid: alice
cn: alice
sn: Liddell
userPassword: %[8]s

dn: %[9]s
objectClass: inetOrgPerson
uid: bob
cn: bob
sn: Builder
userPassword: %[10]s
`
