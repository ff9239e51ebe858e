package ldapengine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel"
)

// The defaults of Conn's timeouts.
const (
	defaultConnectionTimeout = 30 * time.Second
	defaultRequestTimeout    = 90 * time.Second
)

// LDAP is the Directory of real servers, reached with
// github.com/go-ldap/ldap/v3. Its zero value is ready to use and safe for
// concurrent use.
type LDAP struct{}

var _ Directory = LDAP{}

// Bind implements Directory.
func (LDAP) Bind(ctx context.Context, c Conn, dn, password string) (err error) {
	defer prefixErr(&err)
	conn, err := dial(ctx, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	return bindErr(dn, conn.Bind(dn, password))
}

// FindDN implements Directory.
func (LDAP) FindDN(ctx context.Context, c Conn, base, attr, value string) (_ string, err error) {
	defer prefixErr(&err)
	conn, err := open(ctx, c)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	req := ldap.NewSearchRequest(base, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, 0, false,
		fmt.Sprintf("(%s=%s)", ldap.EscapeFilter(attr), ldap.EscapeFilter(value)), []string{"dn"}, nil)
	res, err := conn.Search(req)
	if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
		if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
			return "", fmt.Errorf("ldapengine: ldap: search base %q: %w", base, keel.KindNotFound)
		}
		return "", reqErr("search", err)
	}
	switch {
	case res == nil || len(res.Entries) == 0:
		return "", fmt.Errorf("ldapengine: ldap: no entry under %q with %s=%q: %w", base, attr, value, keel.KindNotFound)
	case len(res.Entries) > 1:
		return "", fmt.Errorf("ldapengine: ldap: several entries under %q with %s=%q: %w", base, attr, value, keel.KindConflict)
	}
	return res.Entries[0].DN, nil
}

// EntryExists implements Directory: a search of the entry itself (base
// scope) that asks for no attribute.
func (LDAP) EntryExists(ctx context.Context, c Conn, dn string) (err error) {
	defer prefixErr(&err)
	conn, err := open(ctx, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := ldap.NewSearchRequest(dn, ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1, 0, false,
		"(objectClass=*)", []string{"1.1"}, nil)
	res, err := conn.Search(req)
	switch {
	case ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject), err == nil && len(res.Entries) == 0:
		return fmt.Errorf("ldapengine: ldap: no entry %q: %w", dn, keel.KindNotFound)
	case err != nil:
		return reqErr("search of "+dn, err)
	}
	return nil
}

// SetPassword implements Directory.
func (LDAP) SetPassword(ctx context.Context, c Conn, dn, password string) (err error) {
	defer prefixErr(&err)
	conn, err := open(ctx, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	switch c.Schema {
	case SchemaAD:
		m := ldap.NewModifyRequest(dn, nil)
		m.Replace("unicodePwd", []string{encodeUnicodePwd(password)})
		err = conn.Modify(m)
	case SchemaRACF:
		m := ldap.NewModifyRequest(dn, nil)
		m.Replace("racfPassword", []string{password})
		err = conn.Modify(m)
	default:
		_, err = conn.PasswordModify(ldap.NewPasswordModifyRequest(dn, "", password))
	}
	if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
		return notApplied(fmt.Errorf("ldapengine: ldap: entry %q: %w", dn, keel.KindNotFound))
	}
	if err != nil {
		return changeErr("password change of "+dn, err)
	}
	return nil
}

// changeErr is the error of a change request. When the server answered
// it with an error (an LDAP result code; go-ldap's own codes, from 200 on,
// are failures on the client's side, such as a timeout or a lost
// connection, after which the change may have been made) the change was
// not made (ErrNotApplied), and the refusal is of kind keel.KindConflict:
// the directory's state or rules forbid it (not allowed on a non-leaf, a
// constraint, missing rights), which trying again does not change. The
// server's transient answers (busy, unavailable, a time or admin limit)
// stay keel.KindUnavailable.
func changeErr(what string, err error) error {
	var le *ldap.Error
	if !errors.As(err, &le) || le.ResultCode >= ldap.ErrorNetwork {
		return reqErr(what, err)
	}
	switch le.ResultCode {
	case ldap.LDAPResultBusy, ldap.LDAPResultUnavailable, ldap.LDAPResultTimeLimitExceeded,
		ldap.LDAPResultAdminLimitExceeded, ldap.LDAPResultUnwillingToPerform, ldap.LDAPResultOther:
		return notApplied(reqErr(what, err))
	}
	return notApplied(fmt.Errorf("ldapengine: ldap: %s: %v: %w", what, err, keel.KindConflict))
}

// encodeUnicodePwd returns the quoted password in UTF-16LE, as Active
// Directory's unicodePwd wants it.
func encodeUnicodePwd(password string) string {
	u := utf16.Encode([]rune(`"` + password + `"`))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		b[2*i], b[2*i+1] = byte(r), byte(r>>8)
	}
	return string(b)
}

// open dials and binds as the manager account of c. Its errors wrap
// ErrNotApplied: nothing was sent but the bind. A refused bind is of kind
// keel.KindConflict: the configured account is wrong, not the caller.
func open(ctx context.Context, c Conn) (*ldap.Conn, error) {
	conn, err := dial(ctx, c)
	if err != nil {
		return nil, notApplied(err)
	}
	user := c.BindDN
	if c.Schema == SchemaAD && c.UPNDomain != "" {
		user = c.BindDN + "@" + c.UPNDomain
	}
	if err := conn.Bind(user, c.BindPass); err != nil {
		conn.Close()
		if ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
			return nil, notApplied(fmt.Errorf("ldapengine: ldap: the directory refuses the configured bind account %q (binddn and bindpass): %v: %w", user, err, keel.KindConflict))
		}
		return nil, notApplied(bindErr(user, err))
	}
	return conn, nil
}

func bindErr(dn string, err error) error {
	switch {
	case err == nil:
		return nil
	case ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials):
		return fmt.Errorf("ldapengine: ldap: bind as %q refused: %w", dn, keel.KindUnauthenticated)
	}
	return reqErr("bind as "+dn, err)
}

func reqErr(what string, err error) error {
	return fmt.Errorf("ldapengine: ldap: %s: %v: %w", what, err, keel.KindUnavailable)
}

// dial connects to the first server of c.URLs that answers.
func dial(ctx context.Context, c Conn) (*ldap.Conn, error) {
	tc, err := tlsConfig(c)
	if err != nil {
		return nil, err
	}
	ct := c.ConnectionTimeout
	if ct <= 0 {
		ct = defaultConnectionTimeout
	}
	rt := c.RequestTimeout
	if rt <= 0 {
		rt = defaultRequestTimeout
	}
	urls := c.URLs
	if len(urls) == 0 {
		urls = []string{defaultURL}
	}
	var errs []string // one line per server, as errors.Join joins them
	for _, u := range urls {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("ldapengine: %w", err)
		}
		u = strings.TrimSpace(u)
		utc := tc.Clone()
		if pu, err := url.Parse(u); err == nil && utc.ServerName == "" {
			utc.ServerName = pu.Hostname()
		}
		d := &net.Dialer{Timeout: ct}
		if dl, ok := ctx.Deadline(); ok {
			d.Deadline = dl
		}
		conn, err := ldap.DialURL(u, ldap.DialWithDialer(d), ldap.DialWithTLSConfig(utc))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		conn.SetTimeout(rt)
		if c.StartTLS && strings.HasPrefix(strings.ToLower(u), "ldap://") {
			if err := conn.StartTLS(utc); err != nil {
				conn.Close()
				errs = append(errs, fmt.Sprintf("%s: starttls: %v", u, err))
				continue
			}
		}
		return conn, nil
	}
	return nil, fmt.Errorf("ldapengine: ldap: no server answers: %s: %w", strings.Join(errs, "\n"), keel.KindUnavailable)
}

var tlsVersions = map[string]uint16{
	"tls10": tls.VersionTLS10,
	"tls11": tls.VersionTLS11,
	"tls12": tls.VersionTLS12,
	"tls13": tls.VersionTLS13,
}

// tlsConfig builds the TLS settings of c; its errors are of kind
// keel.KindInvalid.
func tlsConfig(c Conn) (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: c.InsecureTLS} //nolint:gosec // a documented option
	if c.TLSMinVersion != "" {
		tc.MinVersion = tlsVersions[c.TLSMinVersion]
	}
	if c.TLSMaxVersion != "" {
		tc.MaxVersion = tlsVersions[c.TLSMaxVersion]
	}
	if c.Certificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(c.Certificate)) {
			return nil, invalid("Certificate", "holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if c.ClientTLSCert != "" || c.ClientTLSKey != "" {
		cert, err := tls.X509KeyPair([]byte(c.ClientTLSCert), []byte(c.ClientTLSKey))
		if err != nil {
			return nil, invalid("ClientTLSCert", "and the client key are not a PEM key pair: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Apply implements Directory.
func (LDAP) Apply(ctx context.Context, c Conn, changes []Change, keepGoing bool) (err error) {
	defer prefixErr(&err)
	conn, err := open(ctx, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	var errs []error
	for i, ch := range changes {
		if err := ctx.Err(); err != nil {
			errs = append(errs, &ChangeError{Index: i, Type: ch.Type, DN: ch.DN, Err: notApplied(err)})
			break
		}
		if err := applyOne(conn, ch); err != nil {
			errs = append(errs, &ChangeError{Index: i, Type: ch.Type, DN: ch.DN, Err: err})
			if !keepGoing {
				break
			}
		}
	}
	return join(errs...)
}

func applyOne(conn *ldap.Conn, ch Change) error {
	var err error
	switch ch.Type {
	case ChangeAdd:
		req := ldap.NewAddRequest(ch.DN, nil)
		for _, a := range ch.Attributes {
			req.Attribute(a.Name, a.Values)
		}
		err = conn.Add(req)
	case ChangeModify:
		req := ldap.NewModifyRequest(ch.DN, nil)
		for _, m := range ch.Modifications {
			switch m.Op {
			case ModAdd:
				req.Add(m.Name, m.Values)
			case ModDelete:
				req.Delete(m.Name, m.Values)
			case ModReplace:
				req.Replace(m.Name, m.Values)
			default:
				return fmt.Errorf("ldapengine: ldap: modify operation %q: %w", m.Op, keel.KindInvalid)
			}
		}
		err = conn.Modify(req)
	case ChangeDelete:
		err = conn.Del(ldap.NewDelRequest(ch.DN, nil))
	default:
		return fmt.Errorf("ldapengine: ldap: change type %q: %w", ch.Type, keel.KindInvalid)
	}
	switch {
	case err == nil:
		return nil
	case ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject), ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchAttribute):
		return notApplied(fmt.Errorf("ldapengine: ldap: %v: %w", err, keel.KindNotFound))
	case ldap.IsErrorWithCode(err, ldap.LDAPResultEntryAlreadyExists), ldap.IsErrorWithCode(err, ldap.LDAPResultAttributeOrValueExists):
		return notApplied(fmt.Errorf("ldapengine: ldap: %v: %w", err, keel.KindAlreadyExists))
	}
	return changeErr(ch.Type, err)
}
