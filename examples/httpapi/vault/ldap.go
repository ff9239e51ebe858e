package vault

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/keelhq/keel"
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
	mt := string(eng.Flavor()) // mount_type: the mount's type, ldap or openldap
	section, name, _ := strings.Cut(rest, "/")
	// Role and set names are hierarchical ("team/app"); a library path
	// ends in its action: NAME/status, NAME/check-out, NAME/check-in,
	// manage/NAME/check-in.
	set, action := name, ""
	if section == "library" {
		for _, a := range []string{"/status", "/check-out", "/check-in"} {
			if n, ok := strings.CutSuffix(name, a); ok && n != "" {
				set, action = n, a[1:]
				break
			}
		}
	}
	manage := false
	if action == "check-in" {
		set, manage = strings.CutPrefix(set, "manage/")
	}
	var m methods
	switch {
	case rest == "config":
		m.write = func() { // a merge: only the keys sent change, as in Vault
			writeWith(w, r, "", configFrom, func(ctx context.Context, _ string, u ldapengine.ConfigRequest) error {
				return eng.UpdateConfig(ctx, u)
			})
		}
		m.get = func() {
			c, err := eng.GetConfig(ctx)
			writeRead(w, mt, err, configData(c, eng.Flavor()))
		}
		m.del = func() { writeDone(w, eng.DeleteConfig(ctx)) }
	case rest == "rotate-root":
		m.write = func() { writeDone(w, eng.RotateRoot(ctx)) }
	case (section == "static-role" || section == "role" || section == "library") && (name == "" || isList(r)):
		list := map[string]func(context.Context, string, keel.ListRequest) (keel.Page[string], error){
			"static-role": eng.ListStaticRoles, "role": eng.ListDynamicRoles, "library": eng.ListLibrarySets,
		}[section]
		// Vault's LIST answers every key: every page, in the engine's order.
		listing(mt, "LIST", func(ctx context.Context) ([]string, error) {
			keys := []string{}
			for k, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
				return list(ctx, name, r)
			}) {
				if err != nil {
					return nil, err
				}
				keys = append(keys, k)
			}
			return keys, nil
		})(w, r)
		return
	case section == "static-role":
		m.write = func() { writeWith(w, r, name, staticRoleFrom, eng.PutStaticRole) }
		m.get = func() {
			role, err := eng.GetStaticRole(ctx, name)
			data := map[string]any{"username": role.Username, "dn": role.DN, "rotation_period": seconds(role.RotationPeriod)}
			writeRead(w, mt, err, withRotation(data, role.LastRotation))
		}
		m.del = func() { writeDone(w, eng.DeleteStaticRole(ctx, name)) }
	case section == "static-cred" && name != "":
		m.get = func() {
			c, err := eng.GetStaticCred(ctx, name)
			data := map[string]any{"dn": c.DN, "username": c.Username, "password": c.Password,
				"rotation_period": seconds(c.RotationPeriod), "ttl": seconds(c.TTL)}
			if c.LastPassword != "" { // the ldap flavor, after a rotation
				data["last_password"] = c.LastPassword
			}
			writeRead(w, mt, err, withRotation(data, c.LastRotation))
		}
	case section == "rotate-role" && name != "":
		m.write = func() { writeDone(w, eng.RotateRole(ctx, name)) }
	case section == "role":
		m.write = func() { writeWith(w, r, name, dynamicRoleFrom, eng.PutDynamicRole) }
		m.get = func() {
			role, err := eng.GetDynamicRole(ctx, name)
			writeRead(w, mt, err, map[string]any{
				"creation_ldif": role.CreationLDIF, "deletion_ldif": role.DeletionLDIF, "rollback_ldif": role.RollbackLDIF,
				"username_template": role.UsernameTemplate, "default_ttl": seconds(role.DefaultTTL), "max_ttl": seconds(role.MaxTTL),
			})
		}
		m.del = func() { writeDone(w, eng.DeleteDynamicRole(ctx, name)) }
	case section == "creds" && name != "":
		m.get = func() {
			cred, err := eng.CreateDynamicCred(ctx, name)
			l := cred.Lease
			writeData(w, err, leasedResponse(mt, l.ID, l.Renewable, l.ExpireTime.Sub(l.IssueTime), map[string]any{
				"username": cred.Username, "password": cred.Password, "distinguished_names": cred.DistinguishedNames,
			}))
		}
	case section == "library" && action == "":
		m.write = func() { writeWith(w, r, name, librarySetFrom, eng.PutLibrarySet) }
		m.get = func() {
			s, err := eng.GetLibrarySet(ctx, name)
			writeRead(w, mt, err, map[string]any{
				"service_account_names": s.ServiceAccountNames, "ttl": seconds(s.TTL), "max_ttl": seconds(s.MaxTTL),
				"disable_check_in_enforcement": s.DisableCheckInEnforcement,
			})
		}
		m.del = func() { writeDone(w, eng.DeleteLibrarySet(ctx, name)) }
	case section == "library" && action == "status":
		m.get = func() {
			st, err := eng.GetLibraryStatus(ctx, set)
			data := make(map[string]any, len(st))
			for account, a := range st {
				s := map[string]any{"available": a.Available}
				if !a.Available {
					s["borrower_client_token"], s["borrower_entity_id"] = a.BorrowerClientToken, a.BorrowerEntityID
				}
				data[account] = s
			}
			writeRead(w, mt, err, data)
		}
	case section == "library" && action == "check-out":
		m.write = func() {
			req, err := readBody(w, r, checkOutFrom)
			var co ldapengine.CheckOut
			if err == nil {
				co, err = eng.CheckOut(ctx, set, req)
			}
			l := co.Lease
			writeData(w, err, leasedResponse(mt, l.ID, l.Renewable, l.ExpireTime.Sub(l.IssueTime), map[string]any{
				"service_account_name": co.ServiceAccountName, "password": co.Password,
			}))
		}
	case section == "library" && action == "check-in":
		m.write = func() {
			req, err := readBody(w, r, checkInFrom)
			req.Manage = manage // the path says it: library/manage/NAME/check-in
			var done []string
			if err == nil {
				done, err = eng.CheckIn(ctx, set, req)
			}
			writeData(w, err, newResponse(mt, map[string]any{"check_ins": append([]string{}, done...)})) // never null
		}
	default:
		writeMessage(w, http.StatusNotFound, "unsupported path")
		return
	}
	m.serve(w, r)
}

// configFrom reads the fields of a configuration write: only the keys
// sent change (ldapengine.Engine.UpdateConfig), as Vault merges a write
// into the stored configuration.
func configFrom(f *fields) ldapengine.ConfigRequest {
	return ldapengine.ConfigRequest{
		BindDN:            opt(f, "binddn", f.str),
		BindPass:          opt(f, "bindpass", f.str),
		URL:               opt(f, "url", f.str),
		PasswordPolicy:    opt(f, "password_policy", f.str),
		Schema:            opt(f, "schema", f.str),
		UserDN:            opt(f, "userdn", f.str),
		UserAttr:          opt(f, "userattr", f.str),
		UPNDomain:         opt(f, "upndomain", f.str),
		ConnectionTimeout: opt(f, "connection_timeout", f.duration),
		RequestTimeout:    opt(f, "request_timeout", f.duration),
		StartTLS:          opt(f, "starttls", f.boolean),
		InsecureTLS:       opt(f, "insecure_tls", f.boolean),
		Certificate:       opt(f, "certificate", f.str),
		ClientTLSCert:     opt(f, "client_tls_cert", f.str),
		ClientTLSKey:      opt(f, "client_tls_key", f.str),
		TLSMinVersion:     opt(f, "tls_min_version", f.str),
		TLSMaxVersion:     opt(f, "tls_max_version", f.str),
		Length:            opt(f, "length", f.integer),

		// Vault's settings that keel stores without using them.
		GroupDN:                      opt(f, "groupdn", f.str),
		GroupFilter:                  opt(f, "groupfilter", f.str),
		GroupAttr:                    opt(f, "groupattr", f.str),
		UserFilter:                   opt(f, "userfilter", f.str),
		DenyNullBind:                 opt(f, "deny_null_bind", f.boolean),
		DiscoverDN:                   opt(f, "discoverdn", f.boolean),
		UseTokenGroups:               opt(f, "use_token_groups", f.boolean),
		AnonymousGroupSearch:         opt(f, "anonymous_group_search", f.boolean),
		UsernameAsAlias:              opt(f, "username_as_alias", f.boolean),
		DereferenceAliases:           opt(f, "dereference_aliases", f.str),
		MaxPageSize:                  opt(f, "max_page_size", f.integer),
		EnableSAMAccountNameLogin:    opt(f, "enable_samaccountname_login", f.boolean),
		CaseSensitiveNames:           opt(f, "case_sensitive_names", f.boolean),
		UsePre111GroupCNBehavior:     opt(f, "use_pre111_group_cn_behavior", f.boolean),
		CredentialType:               opt(f, "credential_type", f.str),
		SkipStaticRoleImportRotation: opt(f, "skip_static_role_import_rotation", f.boolean),
		RotationPeriod:               opt(f, "rotation_period", f.duration),
		RotationSchedule:             opt(f, "rotation_schedule", f.str),
		RotationWindow:               opt(f, "rotation_window", f.duration),
		DisableAutomatedRotation:     opt(f, "disable_automated_rotation", f.boolean),
	}
}

// configData is the data of a configuration read: the members of Vault's
// openldap plugin (1.21), with their defaults, never bindpass nor
// client_tls_key; userdn, userattr, upndomain and connection_timeout on
// ldap mounts only (the spec's rule); length always (the spec's, 64 when
// neither it nor password_policy is set); use_pre111_group_cn_behavior and
// last_bind_password_rotation only when set, as Vault.
func configData(c ldapengine.Config, flavor ldapengine.Flavor) map[string]any {
	data := map[string]any{
		"binddn": c.BindDN, "url": c.URL, "password_policy": c.PasswordPolicy, "schema": c.Schema,
		"request_timeout": seconds(c.RequestTimeout), "starttls": c.StartTLS, "insecure_tls": c.InsecureTLS,
		"certificate": c.Certificate, "client_tls_cert": c.ClientTLSCert,
		"tls_min_version": c.TLSMinVersion, "tls_max_version": c.TLSMaxVersion, "length": c.Length,

		"groupdn": c.GroupDN, "groupfilter": c.GroupFilter, "groupattr": c.GroupAttr, "userfilter": c.UserFilter,
		"deny_null_bind": c.DenyNullBind == nil || *c.DenyNullBind, "discoverdn": c.DiscoverDN,
		"use_token_groups": c.UseTokenGroups, "anonymous_group_search": c.AnonymousGroupSearch,
		"username_as_alias": c.UsernameAsAlias, "dereference_aliases": c.DereferenceAliases,
		"max_page_size": c.MaxPageSize, "enable_samaccountname_login": c.EnableSAMAccountNameLogin,
		"case_sensitive_names": c.CaseSensitiveNames, "credential_type": c.CredentialType,
		"rotation_period": seconds(c.RotationPeriod), "rotation_schedule": c.RotationSchedule,
		"rotation_window": seconds(c.RotationWindow), "disable_automated_rotation": c.DisableAutomatedRotation,
		"skip_static_role_import_rotation": c.SkipStaticRoleImportRotation,
	}
	if flavor == ldapengine.FlavorLDAP {
		data["userdn"], data["userattr"], data["upndomain"] = c.UserDN, c.UserAttr, c.UPNDomain
		data["connection_timeout"] = seconds(c.ConnectionTimeout)
	}
	if c.UsePre111GroupCNBehavior != nil {
		data["use_pre111_group_cn_behavior"] = *c.UsePre111GroupCNBehavior
	}
	if !c.LastBindPasswordRotation.IsZero() {
		data["last_bind_password_rotation"] = c.LastBindPasswordRotation.UTC().Format(time.RFC3339Nano)
	}
	return data
}

// withRotation adds the time of the last rotation to data when t is set:
// as the spec's last_secrets_rotation and as Vault's last_vault_rotation
// (the same value).
func withRotation(data map[string]any, t time.Time) map[string]any {
	if !t.IsZero() {
		ts := t.UTC().Format(time.RFC3339)
		data["last_secrets_rotation"], data["last_vault_rotation"] = ts, ts
	}
	return data
}

// staticRoleFrom reads a static role write.
func staticRoleFrom(f *fields) ldapengine.StaticRoleRequest {
	return ldapengine.StaticRoleRequest{Username: f.str("username"), DN: f.str("dn"),
		RotationPeriod: f.duration("rotation_period"), SkipImportRotation: opt(f, "skip_import_rotation", f.boolean)}
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

// checkOutFrom reads a check-out: its ttl.
func checkOutFrom(f *fields) ldapengine.CheckOutRequest {
	return ldapengine.CheckOutRequest{TTL: f.duration("ttl")}
}

// checkInFrom reads a check-in: the accounts named. Manage is the path's
// (library/manage/NAME/check-in), not the body's.
func checkInFrom(f *fields) ldapengine.CheckInRequest {
	return ldapengine.CheckInRequest{ServiceAccountNames: f.strList("service_account_names")}
}
