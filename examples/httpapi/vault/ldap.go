package vault

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/keelhq/keel/ldapengine"
)

// methods are what a path answers: write for POST and PUT, get for GET,
// del for DELETE; nil for a method it does not serve.
type methods struct{ get, write, del func() }

// serve calls the function of r's method, or answers 405 naming the
// methods m serves.
func (m methods) serve(w http.ResponseWriter, r *http.Request) {
	if call := map[string]func(){"POST": m.write, "PUT": m.write, "GET": m.get, "DELETE": m.del}[r.Method]; call != nil {
		call()
		return
	}
	var allow []string
	for _, c := range []struct {
		call  func()
		names string
	}{{m.get, "GET"}, {m.write, "POST, PUT"}, {m.del, "DELETE"}} {
		if c.call != nil {
			allow = append(allow, c.names)
		}
	}
	methodNotAllowed(w, strings.Join(allow, ", "))
}

// serveLDAP answers the request r for rest, the path under the mount of
// the ldap or openldap engine eng (the routes are in the package
// documentation). Every rule is ldapengine's: the adapter only reads the
// wire's fields and writes the engine's answers.
func (h *Handler) serveLDAP(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, rest string) {
	ctx := r.Context()
	section, name, _ := strings.Cut(rest, "/")
	parts := strings.Split(name, "/") // of library paths
	var m methods
	switch {
	case rest == "config":
		m.write = func() {
			writeWith(w, r, "", configFrom, func(ctx context.Context, _ string, c ldapengine.Config) error {
				return eng.WriteConfig(ctx, c)
			})
		}
		m.get = func() { // never bindpass nor client_tls_key; the ldap-only fields for ldap only
			c, err := eng.ReadConfig(ctx)
			data := map[string]any{
				"binddn": c.BindDN, "url": c.URL, "password_policy": c.PasswordPolicy, "schema": c.Schema,
				"request_timeout": seconds(c.RequestTimeout), "starttls": c.StartTLS, "insecure_tls": c.InsecureTLS,
				"certificate": c.Certificate, "client_tls_cert": c.ClientTLSCert,
				"tls_min_version": c.TLSMinVersion, "tls_max_version": c.TLSMaxVersion, "length": c.Length,
			}
			if eng.Flavor() == ldapengine.FlavorLDAP {
				data["userdn"], data["userattr"], data["upndomain"] = c.UserDN, c.UserAttr, c.UPNDomain
				data["connection_timeout"] = seconds(c.ConnectionTimeout)
			}
			writeRead(w, err, data)
		}
		m.del = func() { writeDone(w, eng.DeleteConfig(ctx)) }
	case rest == "rotate-root":
		m.write = func() { writeDone(w, eng.RotateRoot(ctx)) }
	case name == "" && (section == "static-role" || section == "role" || section == "library"):
		listing("LIST", map[string]func(context.Context) ([]string, error){
			"static-role": eng.ListStaticRoles, "role": eng.ListDynamicRoles, "library": eng.ListLibrarySets,
		}[section])(w, r)
		return
	case section == "static-role":
		m.write = func() { writeWith(w, r, name, staticRoleFrom, eng.PutStaticRole) }
		m.get = func() {
			role, err := eng.StaticRole(ctx, name)
			data := map[string]any{"username": role.Username, "dn": role.DN, "rotation_period": seconds(role.RotationPeriod)}
			writeRead(w, err, withRotation(data, role.LastRotation))
		}
		m.del = func() { writeDone(w, eng.DeleteStaticRole(ctx, name)) }
	case section == "static-cred" && name != "":
		m.get = func() {
			c, err := eng.StaticCred(ctx, name)
			data := map[string]any{"dn": c.DN, "username": c.Username, "password": c.Password,
				"rotation_period": seconds(c.RotationPeriod), "ttl": seconds(c.TTL)}
			if c.LastPassword != "" { // the ldap flavor, after a rotation
				data["last_password"] = c.LastPassword
			}
			writeRead(w, err, withRotation(data, c.LastRotation))
		}
	case section == "rotate-role" && name != "":
		m.write = func() { writeDone(w, eng.RotateRole(ctx, name)) }
	case section == "role":
		m.write = func() { writeWith(w, r, name, dynamicRoleFrom, eng.PutDynamicRole) }
		m.get = func() {
			role, err := eng.DynamicRole(ctx, name)
			writeRead(w, err, map[string]any{
				"creation_ldif": role.CreationLDIF, "deletion_ldif": role.DeletionLDIF, "rollback_ldif": role.RollbackLDIF,
				"username_template": role.UsernameTemplate, "default_ttl": seconds(role.DefaultTTL), "max_ttl": seconds(role.MaxTTL),
			})
		}
		m.del = func() { writeDone(w, eng.DeleteDynamicRole(ctx, name)) }
	case section == "creds" && name != "":
		m.get = func() {
			cred, err := eng.Creds(ctx, name)
			l := cred.Lease
			writeData(w, err, leasedResponse(l.ID, l.Renewable, l.ExpireTime.Sub(l.IssueTime), map[string]any{
				"username": cred.Username, "password": cred.Password, "distinguished_names": cred.DistinguishedNames,
			}))
		}
	case section == "library" && len(parts) == 1:
		m.write = func() { writeWith(w, r, name, librarySetFrom, eng.PutLibrarySet) }
		m.get = func() {
			s, err := eng.LibrarySet(ctx, name)
			writeRead(w, err, map[string]any{
				"service_account_names": s.ServiceAccountNames, "ttl": seconds(s.TTL), "max_ttl": seconds(s.MaxTTL),
				"disable_check_in_enforcement": s.DisableCheckInEnforcement,
			})
		}
		m.del = func() { writeDone(w, eng.DeleteLibrarySet(ctx, name)) }
	case section == "library" && len(parts) == 2 && parts[1] == "status":
		m.get = func() {
			st, err := eng.LibraryStatus(ctx, parts[0])
			data := make(map[string]any, len(st))
			for account, a := range st {
				s := map[string]any{"available": a.Available}
				if !a.Available {
					s["borrower_client_token"], s["borrower_entity_id"] = a.BorrowerClientToken, a.BorrowerEntityID
				}
				data[account] = s
			}
			writeRead(w, err, data)
		}
	case section == "library" && len(parts) == 2 && parts[1] == "check-out":
		m.write = func() {
			ttl, err := readBody(w, r, func(f *fields) time.Duration { return f.duration("ttl") })
			var co ldapengine.CheckOut
			if err == nil {
				co, err = eng.CheckOut(ctx, parts[0], ttl)
			}
			l := co.Lease
			writeData(w, err, leasedResponse(l.ID, l.Renewable, l.ExpireTime.Sub(l.IssueTime), map[string]any{
				"service_account_name": co.ServiceAccountName, "password": co.Password,
			}))
		}
	case section == "library" && (len(parts) == 2 && parts[1] == "check-in" ||
		len(parts) == 3 && parts[0] == "manage" && parts[2] == "check-in"):
		m.write = func() {
			names, err := readBody(w, r, func(f *fields) []string { return f.strList("service_account_names") })
			var done []string
			if err == nil {
				done, err = eng.CheckIn(ctx, parts[len(parts)-2], names, len(parts) == 3)
			}
			writeData(w, err, newResponse(map[string]any{"check_ins": append([]string{}, done...)})) // never null
		}
	default:
		writeMessage(w, http.StatusNotFound, "unsupported path")
		return
	}
	m.serve(w, r)
}

// configFrom reads the fields of a configuration write.
func configFrom(f *fields) ldapengine.Config {
	return ldapengine.Config{
		BindDN: f.str("binddn"), BindPass: f.str("bindpass"), URL: f.str("url"),
		PasswordPolicy: f.str("password_policy"), Schema: f.str("schema"),
		UserDN: f.str("userdn"), UserAttr: f.str("userattr"), UPNDomain: f.str("upndomain"),
		ConnectionTimeout: f.duration("connection_timeout"), RequestTimeout: f.duration("request_timeout"),
		StartTLS: f.boolean("starttls"), InsecureTLS: f.boolean("insecure_tls"), Certificate: f.str("certificate"),
		ClientTLSCert: f.str("client_tls_cert"), ClientTLSKey: f.str("client_tls_key"),
		TLSMinVersion: f.str("tls_min_version"), TLSMaxVersion: f.str("tls_max_version"), Length: f.integer("length"),
	}
}

// withRotation adds last_secrets_rotation to data when t is set.
func withRotation(data map[string]any, t time.Time) map[string]any {
	if !t.IsZero() {
		data["last_secrets_rotation"] = t.UTC().Format(time.RFC3339)
	}
	return data
}

// staticRoleFrom reads a static role write.
func staticRoleFrom(f *fields) ldapengine.StaticRoleRequest {
	return ldapengine.StaticRoleRequest{Username: f.str("username"), DN: f.str("dn"),
		RotationPeriod: f.duration("rotation_period"), SkipImportRotation: f.boolean("skip_import_rotation")}
}

// dynamicRoleFrom reads a dynamic role write: only the keys sent change.
func dynamicRoleFrom(f *fields) ldapengine.DynamicRoleRequest {
	return ldapengine.DynamicRoleRequest{
		CreationLDIF: opt(f, "creation_ldif", f.str), DeletionLDIF: opt(f, "deletion_ldif", f.str),
		RollbackLDIF: opt(f, "rollback_ldif", f.str), UsernameTemplate: opt(f, "username_template", f.str),
		DefaultTTL: opt(f, "default_ttl", f.duration), MaxTTL: opt(f, "max_ttl", f.duration),
	}
}

// librarySetFrom reads a library set write: only the keys sent change.
func librarySetFrom(f *fields) ldapengine.LibrarySetRequest {
	return ldapengine.LibrarySetRequest{
		ServiceAccountNames: f.strList("service_account_names"),
		TTL:                 opt(f, "ttl", f.duration), MaxTTL: opt(f, "max_ttl", f.duration),
		DisableCheckInEnforcement: opt(f, "disable_check_in_enforcement", f.boolean),
	}
}
