package ldapengine

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// maxPasswordLength bounds Config.Length: a generated password is built
// in memory, and a client's length must not decide how much.
const maxPasswordLength = 1024

// defaultPasswordLength is the length of passwords generated without a
// password policy or a configured length.
const defaultPasswordLength = 64

// The defaults of the settings of Vault's engine that keel stores and
// reads back without using them (see Config).
const (
	defaultGroupFilter        = "(|(memberUid={{.Username}})(member={{.UserDN}})(uniqueMember={{.UserDN}}))"
	defaultGroupAttr          = "cn"
	defaultUserFilter         = "({{.UserAttr}}={{.Username}})"
	defaultDereferenceAliases = "never"
	// credentialPassword is the one Config.CredentialType keel manages
	// (and its default): the entries' passwords. Vault's "phrase" (RACF
	// password phrases) is refused.
	credentialPassword = "password"
)

// Config is the bind configuration of an engine: where the directory is,
// the account the engine binds as, and how passwords are generated. A
// zero field means the field's default, filled in by PutConfig and
// UpdateConfig and returned by GetConfig. The zero Config is not valid:
// BindDN and BindPass are required.
//
// The fields from GroupDN to DisableAutomatedRotation are settings of
// Vault's engine that keel's engines do not use: the group search, user
// filter and login settings of Vault's shared LDAP configuration (keel
// binds only as BindDN and finds entries only by UserDN and UserAttr),
// the password phrases of RACF, and Vault Enterprise's automated root
// rotation. They are checked as Vault checks them, stored and returned
// with Vault's defaults, so that a configuration written for Vault, and
// its read-back by infrastructure-as-code tools, round-trips; setting
// them changes nothing else. A value keel cannot honour is refused rather
// than stored: CredentialType other than "password", and a
// non-zero RotationPeriod, RotationSchedule or RotationWindow (rotate the
// bind password with RotateRoot).
type Config struct {
	// BindDN is the DN of the account the engine binds as; required.
	BindDN string
	// BindPass is the password of BindDN: required on the first write;
	// empty on a later write, it keeps the stored one (RotateRoot
	// changes it, and no one need know it). GetConfig leaves it empty.
	BindPass string `keel:"secret"`
	// URL is the directory's ldap:// or ldaps:// URL, or several
	// separated by commas, tried in order. Empty: "ldap://127.0.0.1".
	URL string
	// PasswordPolicy names the policy of Options.Policies that generates
	// the passwords. Empty: Length letters and digits.
	PasswordPolicy string
	// Schema is the directory's kind, which decides how a password is
	// changed: SchemaOpenLDAP (the default), SchemaAD or SchemaRACF.
	Schema string
	// UserDN is the base under which an entry is searched by UserAttr (a
	// static role without DN, a library set's accounts). FlavorLDAP only.
	UserDN string
	// UserAttr is the attribute that holds an entry's user name. Empty:
	// cn, or userPrincipalName for SchemaAD, racfid for SchemaRACF.
	// FlavorLDAP only.
	UserAttr string
	// UPNDomain, with SchemaAD, makes the engine bind as
	// BindDN@UPNDomain. FlavorLDAP only.
	UPNDomain string
	// ConnectionTimeout bounds connecting to the directory. Zero:
	// 30s. FlavorLDAP only.
	ConnectionTimeout time.Duration
	// RequestTimeout bounds each request to the directory. Zero:
	// 90s.
	RequestTimeout time.Duration
	// StartTLS upgrades an ldap:// connection to TLS before binding.
	StartTLS bool
	// InsecureTLS accepts any server certificate.
	InsecureTLS bool
	// Certificate holds the PEM certificates of the authorities that
	// verify the server. Empty: the system's.
	Certificate string
	// ClientTLSCert and ClientTLSKey are the PEM certificate and key the
	// engine presents to the server, both or neither. GetConfig leaves
	// ClientTLSKey empty.
	ClientTLSCert string
	ClientTLSKey  string
	// TLSMinVersion and TLSMaxVersion bound the TLS version: "tls10",
	// "tls11", "tls12" or "tls13", the minimum not above the maximum.
	// Empty: "tls12".
	TLSMinVersion string
	TLSMaxVersion string
	// Length is the number of letters and digits of a generated password,
	// at most 1,024; it may not be set with PasswordPolicy.
	// Zero: 64 (GetConfig returns it when
	// PasswordPolicy is empty too). Deprecated in Vault: prefer a policy.
	Length int

	// Stored and returned, not used (see above).
	GroupDN     string // base of Vault's group search
	GroupFilter string // Go template of the group search filter; empty: "(|(memberUid={{.Username}})(member={{.UserDN}})(uniqueMember={{.UserDN}}))"
	GroupAttr   string // attribute naming a group; empty: "cn"
	UserFilter  string // Go template of the user search filter; empty: "({{.UserAttr}}={{.Username}})"
	// DenyNullBind refuses a login without a password. Nil: true (keel
	// never binds without a password).
	DenyNullBind              *bool
	DiscoverDN                bool   // search the user's DN before binding
	UseTokenGroups            bool   // Active Directory's tokenGroups for group search
	AnonymousGroupSearch      bool   // search groups without binding
	UsernameAsAlias           bool   // the login name as the entity alias
	DereferenceAliases        string // "never" (the default), "finding", "searching" or "always"
	MaxPageSize               int    // page size of paged searches
	EnableSAMAccountNameLogin bool   // log in with sAMAccountName
	CaseSensitiveNames        bool   // compare names with case
	// UsePre111GroupCNBehavior: nil is not set, and GetConfig returns nil
	// (as Vault).
	UsePre111GroupCNBehavior *bool
	// CredentialType is what the engine manages: "password" (the
	// default) only.
	CredentialType string
	// SkipStaticRoleImportRotation is the default of a static role's
	// StaticRoleRequest.SkipImportRotation, as in Vault.
	SkipStaticRoleImportRotation bool
	// RotationPeriod, RotationSchedule and RotationWindow would rotate the
	// bind password automatically: zero or empty only.
	RotationPeriod           time.Duration
	RotationSchedule         string
	RotationWindow           time.Duration
	DisableAutomatedRotation bool // stored only

	// LastBindPasswordRotation is when RotateRoot last changed the bind
	// password, zero before. Writes leave it as it is stored.
	LastBindPasswordRotation time.Time
}

// ConfigRequest changes some fields of the configuration (UpdateConfig).
// Its fields are those of Config, as pointers: a nil field keeps the
// stored value (on the first write, the default), a non-nil one replaces
// it, and a pointer to a zero value gives what a zero field of Config
// gives (the default, where there is one); DenyNullBind and
// UsePre111GroupCNBehavior take the value pointed to. BindPass nil or
// empty keeps the stored password. LastBindPasswordRotation cannot be
// written. The zero ConfigRequest changes nothing (and creates no
// configuration: BindDN and BindPass are required).
type ConfigRequest struct {
	BindDN            *string
	BindPass          *string `keel:"secret"`
	URL               *string
	PasswordPolicy    *string
	Schema            *string
	UserDN            *string
	UserAttr          *string
	UPNDomain         *string
	ConnectionTimeout *time.Duration
	RequestTimeout    *time.Duration
	StartTLS          *bool
	InsecureTLS       *bool
	Certificate       *string
	ClientTLSCert     *string
	ClientTLSKey      *string
	TLSMinVersion     *string
	TLSMaxVersion     *string
	Length            *int

	GroupDN                      *string
	GroupFilter                  *string
	GroupAttr                    *string
	UserFilter                   *string
	DenyNullBind                 *bool
	DiscoverDN                   *bool
	UseTokenGroups               *bool
	AnonymousGroupSearch         *bool
	UsernameAsAlias              *bool
	DereferenceAliases           *string
	MaxPageSize                  *int
	EnableSAMAccountNameLogin    *bool
	CaseSensitiveNames           *bool
	UsePre111GroupCNBehavior     *bool
	CredentialType               *string
	SkipStaticRoleImportRotation *bool
	RotationPeriod               *time.Duration
	RotationSchedule             *string
	RotationWindow               *time.Duration
	DisableAutomatedRotation     *bool
}

// set replaces *dst with *src when src is not nil.
func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// apply merges u into c.
func (u *ConfigRequest) apply(c *Config) {
	set(&c.BindDN, u.BindDN)
	if u.BindPass != nil && *u.BindPass != "" {
		c.BindPass = *u.BindPass
	}
	set(&c.URL, u.URL)
	set(&c.PasswordPolicy, u.PasswordPolicy)
	set(&c.Schema, u.Schema)
	set(&c.UserDN, u.UserDN)
	set(&c.UserAttr, u.UserAttr)
	set(&c.UPNDomain, u.UPNDomain)
	set(&c.ConnectionTimeout, u.ConnectionTimeout)
	set(&c.RequestTimeout, u.RequestTimeout)
	set(&c.StartTLS, u.StartTLS)
	set(&c.InsecureTLS, u.InsecureTLS)
	set(&c.Certificate, u.Certificate)
	set(&c.ClientTLSCert, u.ClientTLSCert)
	set(&c.ClientTLSKey, u.ClientTLSKey)
	set(&c.TLSMinVersion, u.TLSMinVersion)
	set(&c.TLSMaxVersion, u.TLSMaxVersion)
	set(&c.Length, u.Length)
	set(&c.GroupDN, u.GroupDN)
	set(&c.GroupFilter, u.GroupFilter)
	set(&c.GroupAttr, u.GroupAttr)
	set(&c.UserFilter, u.UserFilter)
	if u.DenyNullBind != nil {
		c.DenyNullBind = new(*u.DenyNullBind)
	}
	set(&c.DiscoverDN, u.DiscoverDN)
	set(&c.UseTokenGroups, u.UseTokenGroups)
	set(&c.AnonymousGroupSearch, u.AnonymousGroupSearch)
	set(&c.UsernameAsAlias, u.UsernameAsAlias)
	set(&c.DereferenceAliases, u.DereferenceAliases)
	set(&c.MaxPageSize, u.MaxPageSize)
	set(&c.EnableSAMAccountNameLogin, u.EnableSAMAccountNameLogin)
	set(&c.CaseSensitiveNames, u.CaseSensitiveNames)
	if u.UsePre111GroupCNBehavior != nil {
		c.UsePre111GroupCNBehavior = new(*u.UsePre111GroupCNBehavior)
	}
	set(&c.CredentialType, u.CredentialType)
	set(&c.SkipStaticRoleImportRotation, u.SkipStaticRoleImportRotation)
	set(&c.RotationPeriod, u.RotationPeriod)
	set(&c.RotationSchedule, u.RotationSchedule)
	set(&c.RotationWindow, u.RotationWindow)
	set(&c.DisableAutomatedRotation, u.DisableAutomatedRotation)
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

// fillDefaults sets the zero fields of c that have a default to it. It
// also serves records stored before a field existed.
func (e *Engine) fillDefaults(c *Config) {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&c.URL, defaultURL)
	def(&c.Schema, SchemaOpenLDAP)
	if e.feat.userSettings {
		def(&c.UserAttr, defaultUserAttr(c.Schema))
		if c.ConnectionTimeout == 0 {
			c.ConnectionTimeout = defaultConnectionTimeout
		}
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	def(&c.TLSMinVersion, defaultTLSVersion)
	def(&c.TLSMaxVersion, defaultTLSVersion)
	def(&c.GroupFilter, defaultGroupFilter)
	def(&c.GroupAttr, defaultGroupAttr)
	def(&c.UserFilter, defaultUserFilter)
	def(&c.DereferenceAliases, defaultDereferenceAliases)
	def(&c.CredentialType, credentialPassword)
	if c.DenyNullBind == nil {
		c.DenyNullBind = new(true)
	}
}

// validate fills in the defaults of c and checks every rule, reporting
// every broken one at once.
func (e *Engine) validate(c *Config) error {
	var v keel.Validation
	if c.BindDN == "" {
		v.Add("BindDN", "is required")
	}
	if c.BindPass == "" {
		v.Add("BindPass", "is required")
	}
	if !e.feat.userSettings {
		for _, f := range []struct {
			name string
			set  bool
		}{{"UserDN", c.UserDN != ""}, {"UserAttr", c.UserAttr != ""}, {"UPNDomain", c.UPNDomain != ""}, {"ConnectionTimeout", c.ConnectionTimeout != 0}} {
			if f.set {
				v.Add(f.name, "is only supported by the ldap engine, not by openldap")
			}
		}
	}
	e.fillDefaults(c)
	for u := range strings.SplitSeq(c.URL, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil || (pu.Scheme != "ldap" && pu.Scheme != "ldaps") || pu.Host == "" {
			v.Add("URL", "%q is not an ldap:// or ldaps:// URL", strings.TrimSpace(u))
		}
	}
	switch c.Schema {
	case SchemaOpenLDAP, SchemaAD, SchemaRACF:
	default:
		v.Add("Schema", "must be %q, %q or %q", SchemaOpenLDAP, SchemaAD, SchemaRACF)
	}
	if c.ConnectionTimeout < 0 {
		v.Add("ConnectionTimeout", "must not be negative")
	}
	if c.RequestTimeout < 0 {
		v.Add("RequestTimeout", "must not be negative")
	}
	if c.Length != 0 && c.PasswordPolicy != "" {
		v.Add("Length", "cannot be set together with a password policy")
	}
	if c.Length < 0 {
		v.Add("Length", "must not be negative")
	} else if c.Length > maxPasswordLength {
		v.Add("Length", "must be at most %d", maxPasswordLength)
	}
	if c.PasswordPolicy != "" && !passwordpolicy.ValidName(c.PasswordPolicy) {
		v.Add("PasswordPolicy", "is not a valid policy name")
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
	// Vault's settings that keel stores without using them: Vault's own
	// checks, so that what Vault refuses is refused here too.
	for _, f := range []struct{ name, text string }{{"GroupFilter", c.GroupFilter}, {"UserFilter", c.UserFilter}} {
		if _, err := template.New(f.name).Parse(f.text); err != nil {
			v.Add(f.name, "is not a valid Go template: %v", err)
		}
	}
	switch c.DereferenceAliases {
	case "never", "finding", "searching", "always":
	default:
		v.Add("DereferenceAliases", "must be never, finding, searching or always")
	}
	switch c.CredentialType {
	case credentialPassword:
	case "phrase":
		v.Add("CredentialType", "password phrases are not supported: only passwords are managed")
	default:
		v.Add("CredentialType", "must be password")
	}
	const noAutoRotation = "must not be set: the bind password is rotated on demand only (rotate-root), never on a schedule"
	if c.RotationPeriod != 0 {
		v.Add("RotationPeriod", noAutoRotation)
	}
	if c.RotationSchedule != "" {
		v.Add("RotationSchedule", noAutoRotation)
	}
	if c.RotationWindow != 0 {
		v.Add("RotationWindow", noAutoRotation)
	}
	return validation(&v)
}

// PutConfig validates c, fills in its defaults and stores it, creating the
// configuration of the engine or replacing it as a whole: fields left zero
// take their default, except BindPass, which keeps the stored password
// when empty (a rotated root password need not be known), and
// LastBindPasswordRotation, which stays as stored. Broken rules are errors
// of kind keel.KindInvalid naming Config's fields, every one at once, and
// leave the stored configuration as it was. It needs update on
// "MOUNT/config". A new BindPass drops a pending root rotation record.
// The rules are those of UpdateConfig, which changes only some fields.
func (e *Engine) PutConfig(ctx context.Context, c Config) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.PutConfig", "", c, func(ctx context.Context) error {
		return e.putConfig(ctx, c)
	})
}

func (e *Engine) putConfig(ctx context.Context, c Config) (err error) {
	defer prefixErr(&err)
	return e.writeConfig(ctx, func(Config) Config { return c }, c.BindPass != "")
}

// UpdateConfig changes the fields that u sets (its non-nil fields) in the
// stored configuration, validates the result as a whole and stores it, in
// one transaction; the other fields stay as they are. As a configuration
// write of Vault's engine, it also makes the first configuration, from u
// and the defaults, when there is none (u must then set BindDN and
// BindPass). Broken rules are errors of kind keel.KindInvalid naming
// Config's fields, across the merged values (a stored Length refuses a
// new PasswordPolicy unless u sets Length to zero), and leave the stored
// configuration as it was. It needs update on "MOUNT/config". A new
// BindPass drops a pending root rotation record.
func (e *Engine) UpdateConfig(ctx context.Context, u ConfigRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.UpdateConfig", "", u, func(ctx context.Context) error {
		return e.updateConfig(ctx, u)
	})
}

func (e *Engine) updateConfig(ctx context.Context, u ConfigRequest) (err error) {
	defer prefixErr(&err)
	return e.writeConfig(ctx, func(old Config) Config {
		u.apply(&old)
		return old
	}, u.BindPass != nil && *u.BindPass != "")
}

// writeConfig stores the configuration that build makes from the stored
// one (the zero Config when there is none), after validating it: the one
// implementation of PutConfig and UpdateConfig. An empty BindPass keeps
// the stored password; newPass says that the write brings a password of
// its own.
func (e *Engine) writeConfig(ctx context.Context, build func(stored Config) Config, newPass bool) error {
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, e.resource("config")); err != nil {
		return err
	}
	return e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var old Config
		if _, err := getJSON(tx, keyConfig, &old); err != nil {
			return err
		}
		c := build(old)
		if c.BindPass == "" {
			c.BindPass = old.BindPass
		}
		c.LastBindPasswordRotation = old.LastBindPasswordRotation
		if err := e.validate(&c); err != nil {
			return err
		}
		if newPass {
			if err := tx.Delete(keyRootWAL); err != nil {
				return err
			}
		}
		return putJSON(tx, keyConfig, &c)
	})
}

// GetConfig returns the configuration with BindPass and ClientTLSKey
// empty and every default filled in (also for fields that a configuration
// stored by an earlier version of keel lacks). Length is
// 64 when neither Length nor PasswordPolicy is set. No
// configuration is an error of kind keel.KindNotFound. It needs read on
// "MOUNT/config".
func (e *Engine) GetConfig(ctx context.Context) (_ Config, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetConfig", "", nil, func(ctx context.Context) (Config, error) {
		return e.getConfig(ctx)
	})
}

func (e *Engine) getConfig(ctx context.Context) (_ Config, err error) {
	defer prefixErr(&err)
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("config")); err != nil {
		return Config{}, err
	}
	c, err := e.loadConfig(ctx)
	if err != nil {
		return Config{}, err
	}
	e.fillDefaults(&c)
	c.BindPass, c.ClientTLSKey = "", ""
	if c.Length == 0 && c.PasswordPolicy == "" {
		c.Length = defaultPasswordLength
	}
	return c, nil
}

// DeleteConfig removes the configuration (and a pending root rotation
// record); static roles stay, and their rotations fail until a new
// configuration is written. Deleting a missing configuration is not an
// error. It needs delete on "MOUNT/config".
func (e *Engine) DeleteConfig(ctx context.Context) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.DeleteConfig", "", nil, func(ctx context.Context) error {
		return e.deleteConfig(ctx)
	})
}

func (e *Engine) deleteConfig(ctx context.Context) (err error) {
	defer prefixErr(&err)
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
		return Config{}, fmt.Errorf("ldapengine: %s: engine is not configured: %w", e.mount, keel.KindNotFound)
	}
	return c, nil
}

// generate returns a new password by c: from the password policy (with no
// rights check: the caller's right is that of the engine's operation), or
// passwordpolicy.GenerateAlphanumeric with c.Length or
// 64.
func (e *Engine) generate(ctx context.Context, c *Config) (string, error) {
	if c.PasswordPolicy != "" {
		if e.pol == nil {
			return "", fmt.Errorf("ldapengine: password policy %q: no password policies are configured: %w", c.PasswordPolicy, keel.KindNotFound)
		}
		return e.pol.GenerateUnchecked(ctx, c.PasswordPolicy)
	}
	n := c.Length
	if n <= 0 {
		n = defaultPasswordLength
	}
	return passwordpolicy.GenerateAlphanumeric(n)
}
