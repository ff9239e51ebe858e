package vault

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
)

// wireNames is the adapter's one table from the names in the Go paths of
// keel's field errors (keel.FieldError: fields of the operations' inputs,
// and arguments with their first letter upper-cased) to Vault's wire
// names. A key "Type.Name" holds the wire name of Name in the inputs of
// the Go type Type only, where Vault names it otherwise than elsewhere
// (see wirePath). A name that is not in the table is lower-cased.
var wireNames = map[string]string{
	// Arguments and fields shared by several engines.
	"Name": "name", "Path": "path", "Type": "type", "TTL": "ttl", "MaxTTL": "max_ttl",
	"DefaultTTL": "default_ttl", "DisplayName": "display_name",

	// kv: Write's data are the body's own members (`Data["ttl"]` is
	// "ttl"), and the data as a whole is the request as a whole.
	"Data": "",

	// lease.
	"LeaseID": "lease_id", "Increment": "increment", "Prefix": "prefix", "MaxLeases": "max_leases",
	"BlockInterval": "block_interval",

	// mount.EnableRequest: Vault's TTLs are members of "config".
	"Description": "description", "Options": "options",
	"EnableRequest.DefaultTTL": "config.default_lease_ttl",
	"EnableRequest.MaxTTL":     "config.max_lease_ttl",

	// identity.GroupRequest, and the id of a write by id.
	"ID": "id", "Metadata": "metadata", "Policies": "policies",
	"MemberGroupIDs": "member_group_ids", "MemberEntityIDs": "member_entity_ids",

	// ldapengine.Config.
	"BindDN": "binddn", "BindPass": "bindpass", "URL": "url", "PasswordPolicy": "password_policy",
	"Schema": "schema", "UserDN": "userdn", "UserAttr": "userattr", "UPNDomain": "upndomain",
	"ConnectionTimeout": "connection_timeout", "RequestTimeout": "request_timeout",
	"StartTLS": "starttls", "InsecureTLS": "insecure_tls", "Certificate": "certificate",
	"ClientTLSCert": "client_tls_cert", "ClientTLSKey": "client_tls_key",
	"TLSMinVersion": "tls_min_version", "TLSMaxVersion": "tls_max_version", "Length": "length",
	"GroupDN": "groupdn", "GroupFilter": "groupfilter", "GroupAttr": "groupattr", "UserFilter": "userfilter",
	"DenyNullBind": "deny_null_bind", "DiscoverDN": "discoverdn", "UseTokenGroups": "use_token_groups",
	"AnonymousGroupSearch": "anonymous_group_search", "UsernameAsAlias": "username_as_alias",
	"DereferenceAliases": "dereference_aliases", "MaxPageSize": "max_page_size",
	"EnableSAMAccountNameLogin": "enable_samaccountname_login", "CaseSensitiveNames": "case_sensitive_names",
	"UsePre111GroupCNBehavior": "use_pre111_group_cn_behavior", "CredentialType": "credential_type",
	"RotationSchedule": "rotation_schedule", "RotationWindow": "rotation_window",
	"DisableAutomatedRotation": "disable_automated_rotation", "LastBindPasswordRotation": "last_bind_password_rotation",
	"SkipStaticRoleImportRotation": "skip_static_role_import_rotation", "SkipImportRotation": "skip_import_rotation",
	// RotationPeriod (the bind password's, and a static role's) is below.

	// ldapengine: static roles, dynamic roles, library sets and their
	// check-out and check-in. ldapengine.New's Flavor and Mount are the
	// mount's type and path.
	"Username": "username", "DN": "dn", "RotationPeriod": "rotation_period",
	"CreationLDIF": "creation_ldif", "DeletionLDIF": "deletion_ldif", "RollbackLDIF": "rollback_ldif",
	"UsernameTemplate":    "username_template",
	"ServiceAccountNames": "service_account_names", "DisableCheckInEnforcement": "disable_check_in_enforcement",
	"Flavor": "type", "Mount": "path",

	// passwordpolicy: Put's policy text.
	"Policy": "policy",
}

// wirePath returns Vault's wire name for path, the Go path of a field
// error of an operation whose input is of the Go type scope ("" when no
// name of the table depends on it):
//
//   - each name is looked up in wireNames as scope+"."+name, then as name,
//     and lower-cased when it is in neither ("Store" gives "store");
//   - names are joined with dots ("config.default_lease_ttl");
//   - a slice index is dropped (ServiceAccountNames[2] gives
//     "service_account_names"): Vault's fields are flat, and a list may
//     come as one comma-separated string, with no index to point to;
//   - a map key is kept as it is, as a name of its own
//     (Options["version"] gives "options.version");
//   - a name whose wire name is "" is dropped (Data["ttl"] gives "ttl").
//
// Vault's wire names are lower case and the table's keys are Go names,
// upper case: a wire name is never a key, and lower-casing leaves it as it
// is. So wirePath returns a wire name unchanged, and the adapter's own
// problems, which name the wire keys it reads, pass through the same
// translation as the domain's without being translated twice.
func wirePath(scope, path string) string {
	var b strings.Builder
	add := func(name string) {
		if name == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
	}
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if q, err := strconv.QuotedPrefix(path[1:]); err == nil && strings.HasPrefix(path[1+len(q):], "]") {
				key, _ := strconv.Unquote(q)
				add(key)
				end = 1 + len(q)
			}
			if end < 0 {
				end = len(path) - 1
			}
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			name := path[:end]
			wire, ok := "", false
			if scope != "" {
				wire, ok = wireNames[scope+"."+name]
			}
			if !ok {
				if wire, ok = wireNames[name]; !ok {
					wire = strings.ToLower(name)
				}
			}
			add(wire)
			path = path[end:]
		}
	}
	return b.String()
}

// wireError is err as Vault answers a broken rule: for an error of kind
// keel.KindInvalid with field problems, a 400 with one message per
// problem, "wire_name: rule" (the rule alone for the request as a whole),
// the wire names given by wirePath in scope; any other error as it is.
// writeError calls it with the scope "" for every error; a handler whose
// input needs a scope (see wireNames) calls it first.
func wireError(scope string, err error) error {
	fes := keel.FieldErrors(err)
	if len(fes) == 0 || keel.KindOf(err) != keel.KindInvalid {
		return err
	}
	msgs := make([]string, len(fes))
	for i, fe := range fes {
		msgs[i] = (&keel.FieldError{Field: wirePath(scope, fe.Field), Rule: fe.Rule}).Error()
	}
	return &vaultError{http.StatusBadRequest, msgs}
}
