package ldapengine

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// DefaultPasswordLength is the length of passwords generated without a
// password policy or a configured length.
const DefaultPasswordLength = 64

// Config is the bind configuration of an engine ({mount}/config). Field
// comments name the wire field; a zero field means the default of the
// spec, filled in by WriteConfig.
type Config struct {
	BindDN            string        // binddn; required
	BindPass          string        // bindpass; required on first write, kept when empty later; never read back
	URL               string        // url; comma-separated, default DefaultURL
	PasswordPolicy    string        // password_policy; name of a policy of Options.Policies
	Schema            string        // schema; SchemaOpenLDAP (default), SchemaAD, SchemaRACF
	UserDN            string        // userdn; ldap only
	UserAttr          string        // userattr; ldap only; default cn, userPrincipalName or racfid by schema
	UPNDomain         string        // upndomain; ldap only
	ConnectionTimeout time.Duration // connection_timeout; ldap only; default 30s
	RequestTimeout    time.Duration // request_timeout; default 90s
	StartTLS          bool          // starttls
	InsecureTLS       bool          // insecure_tls
	Certificate       string        // certificate (PEM)
	ClientTLSCert     string        // client_tls_cert (PEM)
	ClientTLSKey      string        // client_tls_key (PEM); never read back
	TLSMinVersion     string        // tls_min_version; default tls12
	TLSMaxVersion     string        // tls_max_version; default tls12
	Length            int           // length; deprecated; excludes PasswordPolicy
}

// conn returns the directory connection of c.
func (c *Config) conn() Conn {
	var urls []string
	for u := range strings.SplitSeq(c.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return Conn{
		URLs: urls, BindDN: c.BindDN, BindPass: c.BindPass, Schema: c.Schema, UPNDomain: c.UPNDomain,
		ConnectionTimeout: c.ConnectionTimeout, RequestTimeout: c.RequestTimeout,
		StartTLS: c.StartTLS, InsecureTLS: c.InsecureTLS, Certificate: c.Certificate,
		ClientTLSCert: c.ClientTLSCert, ClientTLSKey: c.ClientTLSKey,
		TLSMinVersion: c.TLSMinVersion, TLSMaxVersion: c.TLSMaxVersion,
	}
}

// bindUser is the name the bind account binds with.
func (c *Config) bindUser() string {
	if c.Schema == SchemaAD && c.UPNDomain != "" {
		return c.BindDN + "@" + c.UPNDomain
	}
	return c.BindDN
}

func defaultUserAttr(schema string) string {
	switch schema {
	case SchemaAD:
		return "userPrincipalName"
	case SchemaRACF:
		return "racfid"
	}
	return "cn"
}

// validate fills in the defaults of c and checks every rule.
func (e *Engine) validate(c *Config) error {
	var v keel.Validation
	if c.BindDN == "" {
		v.Add("BindDN", "is required")
	}
	if e.flavor == FlavorOpenLDAP {
		for _, f := range []struct {
			name string
			set  bool
		}{{"UserDN", c.UserDN != ""}, {"UserAttr", c.UserAttr != ""}, {"UPNDomain", c.UPNDomain != ""}, {"ConnectionTimeout", c.ConnectionTimeout != 0}} {
			if f.set {
				v.Add(f.name, "is only supported by the ldap engine, not by openldap")
			}
		}
	}
	if c.URL == "" {
		c.URL = DefaultURL
	}
	for u := range strings.SplitSeq(c.URL, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil || (pu.Scheme != "ldap" && pu.Scheme != "ldaps") || pu.Host == "" {
			v.Add("URL", "%q is not an ldap:// or ldaps:// URL", strings.TrimSpace(u))
		}
	}
	if c.Schema == "" {
		c.Schema = SchemaOpenLDAP
	}
	switch c.Schema {
	case SchemaOpenLDAP, SchemaAD, SchemaRACF:
	default:
		v.Add("Schema", "must be %q, %q or %q", SchemaOpenLDAP, SchemaAD, SchemaRACF)
	}
	if e.flavor == FlavorLDAP {
		if c.UserAttr == "" {
			c.UserAttr = defaultUserAttr(c.Schema)
		}
		if c.ConnectionTimeout == 0 {
			c.ConnectionTimeout = DefaultConnectionTimeout
		}
	}
	if c.ConnectionTimeout < 0 {
		v.Add("ConnectionTimeout", "must not be negative")
	}
	if c.RequestTimeout < 0 {
		v.Add("RequestTimeout", "must not be negative")
	} else if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Length != 0 && c.PasswordPolicy != "" {
		v.Add("Length", "cannot be set together with a password policy")
	}
	if c.Length < 0 {
		v.Add("Length", "must not be negative")
	}
	if c.PasswordPolicy != "" && !passwordpolicy.ValidName(c.PasswordPolicy) {
		v.Add("PasswordPolicy", "is not a valid policy name")
	}
	if c.TLSMinVersion == "" {
		c.TLSMinVersion = DefaultTLSVersion
	}
	if c.TLSMaxVersion == "" {
		c.TLSMaxVersion = DefaultTLSVersion
	}
	lo, okMin := tlsVersions[c.TLSMinVersion]
	hi, okMax := tlsVersions[c.TLSMaxVersion]
	if !okMin {
		v.Add("TLSMinVersion", "must be tls10, tls11, tls12 or tls13")
	}
	if !okMax {
		v.Add("TLSMaxVersion", "must be tls10, tls11, tls12 or tls13")
	}
	if okMin && okMax && lo > hi {
		v.Add("TLSMaxVersion", "must not be below the minimum TLS version")
	}
	if _, err := tlsConfig(c.conn()); err != nil {
		for _, fe := range keel.FieldErrors(err) {
			v.Add(fe.Field, "%s", fe.Rule)
		}
	}
	return v.Err()
}

// WriteConfig validates c, fills in its defaults and stores it, replacing
// the configuration of the engine (as a whole: fields left zero take their
// default, except BindPass, which keeps the stored password when empty, so
// that a rotated root password need not be known). It needs update on
// "MOUNT/config". A new BindPass drops a pending root rotation record.
func (e *Engine) WriteConfig(ctx context.Context, c Config) error {
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, e.resource("config")); err != nil {
		return err
	}
	if err := e.validate(&c); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var old Config
		found, err := getJSON(tx, keyConfig, &old)
		if err != nil {
			return err
		}
		nc := c
		if nc.BindPass == "" {
			if !found || old.BindPass == "" {
				return keel.Invalid("BindPass", "is required")
			}
			nc.BindPass = old.BindPass
		} else if err := tx.Delete(keyRootWAL); err != nil {
			return err
		}
		return putJSON(tx, keyConfig, &nc)
	})
}

// ReadConfig returns the configuration with BindPass and ClientTLSKey
// empty. Length reads DefaultPasswordLength when neither Length nor
// PasswordPolicy is set. No configuration is an error of kind
// keel.ErrNotFound. It needs read on "MOUNT/config".
func (e *Engine) ReadConfig(ctx context.Context) (Config, error) {
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("config")); err != nil {
		return Config{}, err
	}
	c, err := e.loadConfig(ctx)
	if err != nil {
		return Config{}, err
	}
	c.BindPass, c.ClientTLSKey = "", ""
	if c.Length == 0 && c.PasswordPolicy == "" {
		c.Length = DefaultPasswordLength
	}
	return c, nil
}

// DeleteConfig removes the configuration (and a pending root rotation
// record); static roles stay, and their rotations fail until a new
// configuration is written. Deleting a missing configuration is not an
// error. It needs delete on "MOUNT/config".
func (e *Engine) DeleteConfig(ctx context.Context) error {
	if err := keel.Authorize(ctx, e.auth, keel.CapDelete, e.resource("config")); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Delete(keyConfig); err != nil {
			return err
		}
		return tx.Delete(keyRootWAL)
	})
}

func (e *Engine) loadConfig(ctx context.Context) (Config, error) {
	var c Config
	var found bool
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		found, err = getJSON(tx, keyConfig, &c)
		return err
	})
	if err != nil {
		return Config{}, err
	}
	if !found {
		return Config{}, fmt.Errorf("%s: engine is not configured: %w", e.mount, keel.ErrNotFound)
	}
	return c, nil
}

// generate returns a new password by c: from the password policy (with no
// rights check: the caller's right is that of the engine's operation), or
// passwordpolicy.GenerateAlphanumeric with c.Length or
// DefaultPasswordLength.
func (e *Engine) generate(ctx context.Context, c *Config) (string, error) {
	if c.PasswordPolicy != "" {
		if e.pol == nil {
			return "", fmt.Errorf("password policy %q: no password policies are configured: %w", c.PasswordPolicy, keel.ErrNotFound)
		}
		return e.pol.GenerateUnchecked(ctx, c.PasswordPolicy)
	}
	n := c.Length
	if n <= 0 {
		n = DefaultPasswordLength
	}
	return passwordpolicy.GenerateAlphanumeric(n)
}
