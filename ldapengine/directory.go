package ldapengine

import (
	"context"
	"time"
)

// The schemas of Config.Schema.
const (
	SchemaOpenLDAP = "openldap" // userPassword, through the Password Modify extended operation
	SchemaAD       = "ad"       // unicodePwd, the quoted password in UTF-16LE
	SchemaRACF     = "racf"     // racfPassword
)

// Conn is what a Directory needs to reach a server: the connection part of
// a Config. The zero value of a field means the default of Config.
type Conn struct {
	URLs              []string      // tried in order when connecting fails
	BindDN            string        // the account that manages entries
	BindPass          string        // its password
	Schema            string        // SchemaOpenLDAP, SchemaAD or SchemaRACF
	UPNDomain         string        // with SchemaAD: bind as BindDN@UPNDomain
	ConnectionTimeout time.Duration // per server, while connecting
	RequestTimeout    time.Duration // per request
	StartTLS          bool          // upgrade ldap:// connections with StartTLS
	InsecureTLS       bool          // skip the verification of the server's certificate
	Certificate       string        // PEM CA certificate(s) that sign the server's certificate
	ClientTLSCert     string        // PEM client certificate
	ClientTLSKey      string        // PEM client key
	TLSMinVersion     string        // "tls10" … "tls13"
	TLSMaxVersion     string        // "tls10" … "tls13"
}

// Directory is the small part of LDAP the engine uses. Each call connects
// with c, binds as c.BindDN (except Bind), does its work and disconnects.
//
// Errors wrap keel.ErrUnavailable when no server of c.URLs can be reached
// or a request fails, keel.ErrUnauthenticated when a bind is refused, and
// keel.ErrNotFound when an entry is missing. Implementations must be safe
// for concurrent use.
type Directory interface {
	// Bind checks that dn binds with password on the servers of c.
	Bind(ctx context.Context, c Conn, dn, password string) error
	// FindDN returns the DN of the one entry under base whose attribute
	// attr equals value; no entry is an error of kind keel.ErrNotFound,
	// several of kind keel.ErrConflict.
	FindDN(ctx context.Context, c Conn, base, attr, value string) (string, error)
	// SetPassword sets the password of the entry dn by c.Schema: the
	// Password Modify extended operation for SchemaOpenLDAP (the server
	// stores a hash), a replace of unicodePwd for SchemaAD and of
	// racfPassword for SchemaRACF.
	SetPassword(ctx context.Context, c Conn, dn, password string) error
}
