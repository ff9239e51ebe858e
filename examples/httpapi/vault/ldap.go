package vault

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
)

// The routes of an ldap or openldap mount (MOUNT is its path), answered by
// serveLDAP:
//
//	POST, PUT     MOUNT/config                 write the configuration
//	GET           MOUNT/config                 read it (never bindpass nor client_tls_key)
//	DELETE        MOUNT/config                 delete it
//	POST, PUT     MOUNT/rotate-root            rotate the bind account's password
//	LIST          MOUNT/static-role            list static roles (or GET with list=true)
//	GET           MOUNT/static-role/:name      read a static role
//	POST, PUT     MOUNT/static-role/:name      create or update it
//	DELETE        MOUNT/static-role/:name      delete it
//	GET           MOUNT/static-cred/:name      the role's current credential
//	POST, PUT     MOUNT/rotate-role/:name      rotate the role's password now
//
// and the password policies, shared by every mount (registerPasswordPolicies):
//
//	POST, PUT     sys/policies/password/:name           write a policy {"policy": HCL}
//	GET           sys/policies/password/:name           read it
//	DELETE        sys/policies/password/:name           delete it
//	GET           sys/policies/password/:name/generate  a password from it
//	LIST          sys/policies/password                 list policies (or GET with list=true)
//
// Reads answer 200 with Vault's envelope (durations in seconds, times in
// RFC 3339); writes answer 204; a missing read or an empty list answers 404
// {"errors":[]}. Every rule is ldapengine's: the adapter only reads the
// wire's fields and writes the engine's answers.

// serveLDAP answers the request r for rest, the path under the mount of
// the ldap or openldap engine eng.
func (h *Handler) serveLDAP(w http.ResponseWriter, r *http.Request, eng *ldapengine.Engine, rest string) {
	ctx := r.Context()
	write := r.Method == http.MethodPost || r.Method == http.MethodPut
	section, name, _ := strings.Cut(rest, "/")
	switch {
	case rest == "config":
		switch {
		case write:
			f, ok := readFields(w, r)
			if !ok {
				return
			}
			c := configFrom(f)
			if err := f.v.Err(); err != nil {
				writeError(w, err)
				return
			}
			writeDone(w, eng.WriteConfig(ctx, c))
		case r.Method == http.MethodGet:
			c, err := eng.ReadConfig(ctx)
			writeRead(w, err, func() any { return configOutput(eng.Flavor(), &c) })
		case r.Method == http.MethodDelete:
			writeDone(w, eng.DeleteConfig(ctx))
		default:
			methodNotAllowed(w, "GET, POST, PUT, DELETE")
		}
	case rest == "rotate-root":
		if !write {
			methodNotAllowed(w, "POST, PUT")
			return
		}
		writeDone(w, eng.RotateRoot(ctx))
	case section == "static-role" && name == "":
		if !isList(r) {
			methodNotAllowed(w, "LIST")
			return
		}
		names, err := eng.ListStaticRoles(ctx)
		writeList(w, names, err)
	case section == "static-role":
		switch {
		case write:
			f, ok := readFields(w, r)
			if !ok {
				return
			}
			req := ldapengine.StaticRoleRequest{
				Username:           f.str("username"),
				DN:                 f.str("dn"),
				RotationPeriod:     f.duration("rotation_period"),
				SkipImportRotation: f.boolean("skip_import_rotation"),
			}
			if err := f.v.Err(); err != nil {
				writeError(w, err)
				return
			}
			writeDone(w, eng.PutStaticRole(ctx, name, req))
		case r.Method == http.MethodGet:
			role, err := eng.StaticRole(ctx, name)
			writeRead(w, err, func() any { return staticRoleOutput(&role) })
		case r.Method == http.MethodDelete:
			writeDone(w, eng.DeleteStaticRole(ctx, name))
		default:
			methodNotAllowed(w, "GET, POST, PUT, DELETE")
		}
	case section == "static-cred" && name != "":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		cred, err := eng.StaticCred(ctx, name)
		writeRead(w, err, func() any { return staticCredOutput(&cred) })
	case section == "rotate-role" && name != "":
		if !write {
			methodNotAllowed(w, "POST, PUT")
			return
		}
		writeDone(w, eng.RotateRole(ctx, name))
	case section == "role" || section == "creds":
		h.serveLDAPDynamic(w, r, eng, section, name)
	case section == "library":
		h.serveLDAPLibrary(w, r, eng, name)
	default:
		writeJSON(w, http.StatusNotFound, errorBody{Errors: []string{"unsupported path"}})
	}
}

// configFrom reads the fields of a configuration write; type errors go to
// f.v.
func configFrom(f *fields) ldapengine.Config {
	return ldapengine.Config{
		BindDN:            f.str("binddn"),
		BindPass:          f.str("bindpass"),
		URL:               f.str("url"),
		PasswordPolicy:    f.str("password_policy"),
		Schema:            f.str("schema"),
		UserDN:            f.str("userdn"),
		UserAttr:          f.str("userattr"),
		UPNDomain:         f.str("upndomain"),
		ConnectionTimeout: f.duration("connection_timeout"),
		RequestTimeout:    f.duration("request_timeout"),
		StartTLS:          f.boolean("starttls"),
		InsecureTLS:       f.boolean("insecure_tls"),
		Certificate:       f.str("certificate"),
		ClientTLSCert:     f.str("client_tls_cert"),
		ClientTLSKey:      f.str("client_tls_key"),
		TLSMinVersion:     f.str("tls_min_version"),
		TLSMaxVersion:     f.str("tls_max_version"),
		Length:            f.integer("length"),
	}
}

// configOutput is the data of a configuration read; the ldap-only fields
// appear for the ldap flavor only.
func configOutput(flavor ldapengine.Flavor, c *ldapengine.Config) map[string]any {
	data := map[string]any{
		"binddn":          c.BindDN,
		"url":             c.URL,
		"password_policy": c.PasswordPolicy,
		"schema":          c.Schema,
		"request_timeout": seconds(c.RequestTimeout),
		"starttls":        c.StartTLS,
		"insecure_tls":    c.InsecureTLS,
		"certificate":     c.Certificate,
		"client_tls_cert": c.ClientTLSCert,
		"tls_min_version": c.TLSMinVersion,
		"tls_max_version": c.TLSMaxVersion,
		"length":          c.Length,
	}
	if flavor == ldapengine.FlavorLDAP {
		data["userdn"] = c.UserDN
		data["userattr"] = c.UserAttr
		data["upndomain"] = c.UPNDomain
		data["connection_timeout"] = seconds(c.ConnectionTimeout)
	}
	return data
}

// staticRoleOutput is the data of a static role read.
func staticRoleOutput(r *ldapengine.StaticRole) map[string]any {
	data := map[string]any{
		"username":        r.Username,
		"dn":              r.DN,
		"rotation_period": seconds(r.RotationPeriod),
	}
	if !r.LastRotation.IsZero() {
		data["last_secrets_rotation"] = r.LastRotation.UTC().Format(time.RFC3339)
	}
	return data
}

// staticCredOutput is the data of a static-cred read; last_password is
// there when the engine returns one (the ldap flavor, after a rotation).
func staticCredOutput(c *ldapengine.StaticCred) map[string]any {
	data := map[string]any{
		"dn":              c.DN,
		"username":        c.Username,
		"password":        c.Password,
		"rotation_period": seconds(c.RotationPeriod),
		"ttl":             seconds(c.TTL),
	}
	if !c.LastRotation.IsZero() {
		data["last_secrets_rotation"] = c.LastRotation.UTC().Format(time.RFC3339)
	}
	if c.LastPassword != "" {
		data["last_password"] = c.LastPassword
	}
	return data
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// registerPasswordPolicies adds the sys/policies/password routes.
func (h *Handler) registerPasswordPolicies(mux *http.ServeMux) {
	const p = "/v1/sys/policies/password"
	for _, method := range []string{"POST", "PUT"} {
		mux.HandleFunc(method+" "+p+"/{name}", h.passwordPolicyWrite)
	}
	mux.HandleFunc("GET "+p+"/{name}", h.passwordPolicyRead)
	mux.HandleFunc("DELETE "+p+"/{name}", h.passwordPolicyDelete)
	mux.HandleFunc("GET "+p+"/{name}/generate", h.passwordPolicyGenerate)
	for _, route := range []string{p, p + "/{$}"} {
		mux.HandleFunc("LIST "+route, h.passwordPolicyList)
		mux.HandleFunc("GET "+route, h.passwordPolicyList)
	}
}

// passwordPolicyWrite answers POST and PUT sys/policies/password/:name.
func (h *Handler) passwordPolicyWrite(w http.ResponseWriter, r *http.Request) {
	f, ok := readFields(w, r)
	if !ok {
		return
	}
	text := f.str("policy")
	if err := f.v.Err(); err != nil {
		writeError(w, err)
		return
	}
	writeDone(w, h.mounts.PasswordPolicies().Put(r.Context(), r.PathValue("name"), text))
}

// passwordPolicyRead answers GET sys/policies/password/:name.
func (h *Handler) passwordPolicyRead(w http.ResponseWriter, r *http.Request) {
	text, err := h.mounts.PasswordPolicies().Get(r.Context(), r.PathValue("name"))
	writeRead(w, err, func() any { return map[string]any{"policy": text} })
}

// passwordPolicyDelete answers DELETE sys/policies/password/:name.
func (h *Handler) passwordPolicyDelete(w http.ResponseWriter, r *http.Request) {
	writeDone(w, h.mounts.PasswordPolicies().Delete(r.Context(), r.PathValue("name")))
}

// passwordPolicyGenerate answers GET sys/policies/password/:name/generate.
// A missing policy is a 404 that says so.
func (h *Handler) passwordPolicyGenerate(w http.ResponseWriter, r *http.Request) {
	pw, err := h.mounts.PasswordPolicies().Generate(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, newResponse(map[string]any{"password": pw}))
}

// passwordPolicyList answers LIST sys/policies/password.
func (h *Handler) passwordPolicyList(w http.ResponseWriter, r *http.Request) {
	if !isList(r) {
		methodNotAllowed(w, "LIST")
		return
	}
	names, err := h.mounts.PasswordPolicies().List(r.Context())
	writeList(w, names, err)
}

// writeDone answers a write: 204, or the error.
func writeDone(w http.ResponseWriter, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeRead answers a read: 404 {"errors":[]} when missing, the error, or
// 200 with the data that data returns.
func writeRead(w http.ResponseWriter, err error, data func() any) {
	switch {
	case keel.KindOf(err) == keel.KindNotFound:
		writeNotFound(w)
	case err != nil:
		writeError(w, err)
	default:
		writeJSON(w, http.StatusOK, newResponse(data()))
	}
}

// writeList answers a listing: 404 {"errors":[]} when empty.
func writeList(w http.ResponseWriter, keys []string, err error) {
	switch {
	case err != nil:
		writeError(w, err)
	case len(keys) == 0:
		writeNotFound(w)
	default:
		writeJSON(w, http.StatusOK, newResponse(map[string]any{"keys": keys}))
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Errors: []string{"unsupported operation"}})
}

// fields reads the typed fields of a request body as Vault's field types
// do: strings, booleans and integers may come as JSON values or strings,
// durations as ldapengine.ParseDuration reads them. A field of the wrong
// type is recorded in v. Unknown fields are ignored, as Vault does.
type fields struct {
	m map[string]any
	v keel.Validation
}

// readFields decodes the body of r; on failure it has answered w.
func readFields(w http.ResponseWriter, r *http.Request) (*fields, bool) {
	f := &fields{}
	if err := decodeBody(w, r, &f.m); err != nil {
		writeError(w, err)
		return nil, false
	}
	return f, true
}

func (f *fields) str(k string) string {
	switch x := f.m[k].(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	default:
		f.v.Add(k, "must be a string")
		return ""
	}
}

// has reports whether the body holds the field k (for partial updates).
func (f *fields) has(k string) bool {
	_, ok := f.m[k]
	return ok
}

// strList reads a list of strings sent as a JSON array or as one
// comma-separated string, as Vault's comma-string-slice fields are; nil
// when the field is absent.
func (f *fields) strList(k string) []string {
	switch x := f.m[k].(type) {
	case nil:
		return nil
	case string:
		out := []string{}
		for p := range strings.SplitSeq(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				f.v.Add(k, "must be a string or a list of strings")
				return nil
			}
			out = append(out, s)
		}
		return out
	default:
		f.v.Add(k, "must be a string or a list of strings")
		return nil
	}
}

func (f *fields) boolean(k string) bool {
	switch x := f.m[k].(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		if x == "" {
			return false
		}
		if b, err := strconv.ParseBool(x); err == nil {
			return b
		}
	}
	f.v.Add(k, "must be a boolean")
	return false
}

func (f *fields) integer(k string) int {
	var s string
	switch x := f.m[k].(type) {
	case nil:
		return 0
	case json.Number:
		s = x.String()
	case string:
		if x == "" {
			return 0
		}
		s = x
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		f.v.Add(k, "must be an integer")
	}
	return n
}

func (f *fields) duration(k string) time.Duration {
	d, err := ldapengine.ParseDuration(k, f.m[k])
	for _, fe := range keel.FieldErrors(err) {
		f.v.Add(fe.Field, "%s", fe.Rule)
	}
	return d
}
