package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel/ldapengine/internal/ldifparse"
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
// Errors wrap keel.KindUnavailable when no server of c.URLs can be reached
// or a request fails, keel.KindUnauthenticated when Bind's dn is refused,
// keel.KindConflict when the directory refuses c.BindDN itself (the
// configuration is wrong, not the caller), and keel.KindNotFound when an
// entry is missing. An error of a change (SetPassword, Apply) also wraps
// ErrNotApplied when the change was certainly not made: the call failed
// before sending it, or the server answered it with an error. Without
// ErrNotApplied the outcome is unknown (a timeout, a lost connection after
// the request went out): the engine then treats the change as possibly
// made. Implementations must be safe for concurrent use.
type Directory interface {
	// Bind checks that dn binds with password on the servers of c.
	Bind(ctx context.Context, c Conn, dn, password string) error
	// FindDN returns the DN of the one entry under base whose attribute
	// attr equals value; no entry is an error of kind keel.KindNotFound,
	// several of kind keel.KindConflict.
	FindDN(ctx context.Context, c Conn, base, attr, value string) (string, error)
	// EntryExists returns nil when the entry dn exists, and an error of
	// kind keel.KindNotFound when it does not.
	EntryExists(ctx context.Context, c Conn, dn string) error
	// SetPassword sets the password of the entry dn by c.Schema: the
	// Password Modify extended operation for SchemaOpenLDAP (the server
	// stores a hash), a replace of unicodePwd for SchemaAD and of
	// racfPassword for SchemaRACF.
	SetPassword(ctx context.Context, c Conn, dn, password string) error
	// Apply runs changes in order over one connection, bound as
	// c.BindDN. With keepGoing false it stops at the first change that
	// fails; with keepGoing true it runs every change. It returns nil
	// when every change it ran succeeded, an error of the connection or
	// bind when it could run none, and otherwise one *ChangeError per
	// failed change, joined in order (errors.Join, or any error whose
	// Unwrap() []error returns them, as LDAP's). A missing entry
	// (or, in a modify, a missing attribute value to delete) is of kind
	// keel.KindNotFound, an entry or value that exists already of kind
	// keel.KindAlreadyExists.
	Apply(ctx context.Context, c Conn, changes []Change, keepGoing bool) error
}

// ErrNotApplied marks the error of a directory change that was certainly
// not made (see Directory). It carries no kind of its own: the error also
// wraps one of package keel.
var ErrNotApplied = errors.New("ldapengine: the change was not made")

// The types of Change, those of LDIF change records (RFC 2849).
const (
	ChangeAdd    = ldifparse.ChangeAdd    // "add"
	ChangeModify = ldifparse.ChangeModify // "modify"
	ChangeDelete = ldifparse.ChangeDelete // "delete"
)

// The operations of a Modification.
const (
	ModAdd     = ldifparse.ModAdd     // "add"
	ModDelete  = ldifparse.ModDelete  // "delete"
	ModReplace = ldifparse.ModReplace // "replace"
)

// Change is one LDIF change record: add an entry with Attributes (its
// attribute types and values), apply Modifications to an entry in order,
// or delete an entry. Its Type is ChangeAdd, ChangeModify or ChangeDelete.
// It is the type the LDIF parser of dynamic roles produces, so that
// parsed changes go to a Directory as they are.
type Change = ldifparse.Change

// Attribute is an attribute type (Name) and its Values.
type Attribute = ldifparse.Attribute

// Modification is one part of a modify change: Op is ModAdd (add the
// values), ModDelete (delete the values, or the whole attribute when
// there are none) or ModReplace (replace every value; none removes the
// attribute).
type Modification = ldifparse.Modification

// ChangeError is the failure of one change of Apply. Err carries the kind
// (keel.KindNotFound, keel.KindAlreadyExists, keel.KindUnavailable, …).
type ChangeError struct {
	Index int    // the change's position in the list given to Apply, from 0
	Type  string // the change's Type
	DN    string // the change's DN
	Err   error
}

// Error names the change and its DN, then gives Err's message: "ldapengine:
// entry 1 (add "cn=…"): …", with the package's prefix once.
func (e *ChangeError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = bare(e.Err)
	}
	return fmt.Sprintf("ldapengine: entry %d (%s %q): %s", e.Index+1, e.Type, e.DN, msg)
}

// Unwrap returns Err.
func (e *ChangeError) Unwrap() error { return e.Err }
