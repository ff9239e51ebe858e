package vault

import (
	"net/http"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
)

// mountOutput is a mount's entry as sys/mounts and
// sys/internal/ui/mounts show it: Vault's members, in the order of their
// names, as Vault (encoding/json from a map) writes them.
type mountOutput struct {
	Accessor              string            `json:"accessor"`
	Config                mountConfigOutput `json:"config"`
	DeprecationStatus     string            `json:"deprecation_status"`
	Description           string            `json:"description"`
	ExternalEntropyAccess bool              `json:"external_entropy_access"`
	Local                 bool              `json:"local"`
	Options               map[string]string `json:"options"`
	// Path is set by sys/internal/ui/mounts only, as Vault's.
	Path                 string `json:"path,omitempty"`
	PluginVersion        string `json:"plugin_version"`
	RunningPluginVersion string `json:"running_plugin_version"`
	RunningSHA256        string `json:"running_sha256"`
	SealWrap             bool   `json:"seal_wrap"`
	Type                 string `json:"type"`
	UUID                 string `json:"uuid"`
	// Error, set only on a stored mount that is not served (it no longer
	// validates, or its removal did not finish), says why: keel's, not
	// Vault's.
	Error string `json:"error,omitempty"`
}

// mountConfigOutput is the config of a mount's entry; a TTL of 0 is the
// system's, as Vault's mount table shows it.
type mountConfigOutput struct {
	DefaultLeaseTTL int64 `json:"default_lease_ttl"`
	ForceNoCache    bool  `json:"force_no_cache"`
	MaxLeaseTTL     int64 `json:"max_lease_ttl"`
}

// mountInfo is the entry of m as Vault shows a mount of a built-in
// engine: no plugin version pinned, the program's version running, never
// local, seal-wrapped or with external entropy (keel has none of these),
// "supported".
func (h *Handler) mountInfo(m *mount.Mount) mountOutput {
	out := mountOutput{
		Accessor:          m.Accessor,
		Config:            mountConfigOutput{DefaultLeaseTTL: seconds(m.DefaultTTL), MaxLeaseTTL: seconds(m.MaxTTL)},
		DeprecationStatus: "supported", Description: m.Description, Options: m.Options,
		RunningPluginVersion: h.server.Version + "+builtin.keel", Type: m.Type, UUID: m.UUID,
	}
	switch {
	case m.Err != nil:
		out.Error = m.Err.Error()
	case m.Disabling:
		out.Error = "being disabled: unmount it again to finish"
	}
	return out
}

// listMounts answers GET sys/mounts: every mount of the table, a stored
// mount that is not served with the reason in "error".
func (h *Handler) listMounts(w http.ResponseWriter, r *http.Request) {
	mounts, err := h.mounts.List(r.Context())
	data := make(map[string]mountOutput, len(mounts))
	for i := range mounts {
		data[mounts[i].Path] = h.mountInfo(&mounts[i])
	}
	writeData(w, err, newResponse(mountSystem, data))
}

// readMount answers GET sys/mounts/:path: the entry of the mount at path
// (with or without its trailing "/"), or, as Vault, 400 "No secret engine
// mount at PATH/" when there is none.
func (h *Handler) readMount(w http.ResponseWriter, r *http.Request) {
	m, err := h.mounts.Get(r.Context(), r.PathValue("path"))
	if keel.KindOf(err) == keel.KindNotFound {
		p := strings.TrimSuffix(r.PathValue("path"), "/") + "/"
		err = &vaultError{http.StatusBadRequest, []string{"No secret engine mount at " + p}}
	}
	out := h.mountInfo(&m)
	writeData(w, err, newResponse(mountSystem, &out))
}

// mountInput is the body of POST sys/mounts/:path.
type mountInput struct {
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Options     map[string]string `json:"options"`
	Config      struct {
		DefaultLeaseTTL string `json:"default_lease_ttl"`
		MaxLeaseTTL     string `json:"max_lease_ttl"`
	} `json:"config"`
}

// mount answers POST sys/mounts/:path: enable a kv version 1, ldap or
// openldap engine. Its problems, the adapter's TTLs included, name the
// fields of mount.EnableRequest, answered in the scope of that type
// ("DefaultTTL" is config.default_lease_ttl there).
func (h *Handler) mount(w http.ResponseWriter, r *http.Request) {
	var in mountInput
	err := decodeBody(w, r, &in)
	if err == nil {
		var v keel.Validation
		req := mount.EnableRequest{
			Path: r.PathValue("path"), Type: in.Type, Description: in.Description, Options: in.Options,
			DefaultTTL: parseTTL(&v, "DefaultTTL", in.Config.DefaultLeaseTTL),
			MaxTTL:     parseTTL(&v, "MaxTTL", in.Config.MaxLeaseTTL),
		}
		if err = v.Err(); err == nil {
			_, err = h.mounts.Enable(r.Context(), req)
		}
	}
	writeDone(w, wireError("EnableRequest", err))
}

// parseTTL reads the TTL s of field, a Go path into mount.EnableRequest,
// as Vault does: empty (or "system") is zero, the system value; else as
// keel.ParseDuration reads it. A problem is recorded in v.
func parseTTL(v *keel.Validation, field, s string) time.Duration {
	if s == "system" {
		return 0
	}
	d, err := keel.ParseDuration(field, s)
	for _, fe := range keel.FieldErrors(err) {
		v.Add(fe.Field, "%s", fe.Rule)
	}
	return d
}
