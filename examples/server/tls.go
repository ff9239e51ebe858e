package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// tlsOptions are the TLS flags: a certificate and key of the caller's
// (-tls-cert, -tls-key), or a throwaway CA and certificate made at start
// (-dev-tls, in -dev-tls-dir or a temporary directory).
type tlsOptions struct {
	certFile, keyFile string
	dev               bool
	devDir            string
}

// enabled reports whether the server serves TLS.
func (o tlsOptions) enabled() bool { return o.dev || o.certFile != "" }

// check returns what is wrong with a combination of TLS flags, or nil.
func (o tlsOptions) check() error {
	switch {
	case (o.certFile == "") != (o.keyFile == ""):
		return errors.New("-tls-cert and -tls-key go together")
	case o.dev && o.certFile != "":
		return errors.New("-dev-tls and -tls-cert exclude each other")
	case o.devDir != "" && !o.dev:
		return errors.New("-dev-tls-dir needs -dev-tls")
	}
	return nil
}

// The names of the files -dev-tls writes.
const (
	devCAFile   = "ca.pem"   // the CA's certificate: what clients trust
	devCertFile = "cert.pem" // the server's certificate, signed by the CA
	devKeyFile  = "key.pem"  // the server's private key
)

// devTLSValidity is how long the certificates of -dev-tls are valid.
const devTLSValidity = 30 * 24 * time.Hour

// devTLS makes a throwaway CA and a server certificate signed by it, for
// the loopback names (localhost, 127.0.0.1, ::1) and the given extra hosts
// (names or IP addresses), and writes them into dir as writePrivateFiles
// does: devCAFile, devCertFile and devKeyFile, each of mode 0600, never
// through a symbolic link, replacing those of an earlier start. The CA's
// private key is never written: nothing else can be signed with it.
func devTLS(dir string, hosts []string, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial := func() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) }
	caSerial, err := serial()
	if err != nil {
		return err
	}
	notBefore, notAfter := now.Add(-time.Minute), now.Add(devTLSValidity)
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{Organization: []string{"keel"}, CommonName: "keel development CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	certSerial, err := serial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: certSerial,
		Subject:      pkix.Name{Organization: []string{"keel"}, CommonName: "localhost"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	encode := func(blockType string, der []byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	}
	return writePrivateFiles(dir, []privateFile{
		{devCAFile, encode("CERTIFICATE", caDER)},
		{devCertFile, encode("CERTIFICATE", certDER)},
		{devKeyFile, encode("PRIVATE KEY", keyDER)},
	})
}

// privateFile is a file for writePrivateFiles: its name in the directory
// and its contents.
type privateFile struct {
	name string
	data []byte
}

// writePrivateFiles writes files into dir, each of mode 0600 (less what
// the umask takes), one simple rule for keys and certificates alike, and
// never through a symbolic link. It first checks, and writes nothing
// unless all hold, that
//
//   - dir itself, not a symbolic link to one, is a directory that grants
//     group and others no permission (as MkdirTemp's or loadTLS's 0700);
//   - each of the files that exists already, as those of an earlier start
//     over the same -dev-tls-dir, is a regular file, not a symbolic link,
//     that grants group and others no permission: it is replaced, so a key
//     that others could read, or a link whose target the server would
//     overwrite, is refused instead.
//
// Its errors name the directory or the file and what is wrong with it.
// Each file is created new under a temporary name in dir (O_CREATE|O_EXCL,
// which never follows a symbolic link, and through an os.Root opened on
// the directory checked) and then renamed over its name. On Windows, where
// permission bits do not say who may read a file, the mode checks are
// skipped.
func writePrivateFiles(dir string, files []privateFile) error {
	dir = filepath.Clean(dir) // Lstat follows a symbolic link written "dir/"
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := checkPrivate(dir, fi, true); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if rfi, err := root.Stat("."); err != nil {
		return err
	} else if !os.SameFile(fi, rfi) {
		return fmt.Errorf("%s: replaced while being opened", dir)
	}
	for _, f := range files {
		fi, err := root.Lstat(f.name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := checkPrivate(filepath.Join(dir, f.name), fi, false); err != nil {
			return err
		}
	}
	for _, f := range files {
		tmp := "." + f.name + "." + rand.Text()
		w, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = w.Write(f.data)
		if err = errors.Join(err, w.Close()); err == nil {
			err = root.Rename(tmp, f.name)
		}
		if err != nil {
			root.Remove(tmp)
			return fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

// checkPrivate returns what makes path, of the Lstat information fi, unfit
// to hold secrets, or nil: a symbolic link; not a directory (isDir) or not
// a regular file; a mode that grants group or others any permission.
func checkPrivate(path string, fi os.FileInfo, isDir bool) error {
	mode, want := fi.Mode(), "0600"
	if isDir {
		want = "0700"
	}
	switch {
	case mode&os.ModeSymlink != 0:
		return fmt.Errorf("%s: a symbolic link, refused: it is never followed", path)
	case isDir && !mode.IsDir():
		return fmt.Errorf("%s: not a directory", path)
	case !isDir && !mode.IsRegular():
		return fmt.Errorf("%s: not a regular file", path)
	case runtime.GOOS != "windows" && mode.Perm()&0o077 != 0:
		return fmt.Errorf("%s: mode %#o grants group or others access, refused (want %s)", path, uint32(mode.Perm()), want)
	}
	return nil
}

// devTLSHosts returns the hosts of the listen and advertise addresses that
// a -dev-tls certificate names besides the loopback ones: not the
// unspecified addresses (0.0.0.0, ::), which no client dials.
func devTLSHosts(addrs ...string) []string {
	var hosts []string
	for _, a := range addrs {
		h, _, err := net.SplitHostPort(a)
		if err != nil || h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			continue
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// serverTLS is what the TLS flags give the server: its configuration, the
// CA file of -dev-tls (empty otherwise), and a function that removes what
// -dev-tls wrote in a temporary directory of its own (nil otherwise).
type serverTLS struct {
	config  *tls.Config
	caFile  string
	cleanup func() error
}

// loadTLS returns the TLS configuration of the flags o, nil when they ask
// for none. With -dev-tls it first writes a throwaway CA and certificate
// for hosts (see devTLS) into -dev-tls-dir, created 0700 when missing and
// refused, with an error naming -dev-tls-dir, when writePrivateFiles
// refuses it or its files; or into a new temporary directory that cleanup
// removes.
func loadTLS(o tlsOptions, hosts []string, now time.Time) (serverTLS, error) {
	if !o.enabled() {
		return serverTLS{}, nil
	}
	var st serverTLS
	certFile, keyFile := o.certFile, o.keyFile
	if o.dev {
		dir, what := o.devDir, "-dev-tls-dir"
		if dir == "" {
			tmp, err := os.MkdirTemp("", "keel-dev-tls-")
			if err != nil {
				return st, fmt.Errorf("dev TLS: %w", err)
			}
			dir, what = tmp, "dev TLS"
			st.cleanup = func() error { return os.RemoveAll(tmp) }
		} else if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return st, fmt.Errorf("-dev-tls-dir: %w", err)
			}
		}
		if err := devTLS(dir, hosts, now); err != nil {
			if st.cleanup != nil {
				st.cleanup()
			}
			return serverTLS{}, fmt.Errorf("%s: %w", what, err)
		}
		certFile, keyFile = filepath.Join(dir, devCertFile), filepath.Join(dir, devKeyFile)
		st.caFile = filepath.Join(dir, devCAFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		if st.cleanup != nil {
			st.cleanup()
		}
		return serverTLS{}, fmt.Errorf("tls: %w", err)
	}
	st.config = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return st, nil
}
