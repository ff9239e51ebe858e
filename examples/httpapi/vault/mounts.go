package vault

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/mount"
)

// mountOutput is a mount as GET sys/mounts shows it.
type mountOutput struct {
	UUID        string            `json:"uuid"`
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Accessor    string            `json:"accessor"`
	Config      mountConfigOutput `json:"config"`
	Options     map[string]string `json:"options"`
	Local       bool              `json:"local"`
	SealWrap    bool              `json:"seal_wrap"`
	// Error, set only on a stored mount that is not served (it no longer
	// validates, or its removal did not finish), says why: keel's, not
	// Vault's.
	Error string `json:"error,omitempty"`
}

type mountConfigOutput struct {
	DefaultLeaseTTL int64 `json:"default_lease_ttl"`
	MaxLeaseTTL     int64 `json:"max_lease_ttl"`
	ForceNoCache    bool  `json:"force_no_cache"`
}

// listMounts answers GET sys/mounts: every mount of the table, a stored
// mount that is not served with the reason in "error".
func (h *Handler) listMounts(w http.ResponseWriter, r *http.Request) {
	mounts, err := h.mounts.List(r.Context())
	data := make(map[string]any, len(mounts))
	for _, m := range mounts {
		out := mountOutput{
			UUID: m.UUID, Type: m.Type, Description: m.Description, Accessor: m.Accessor,
			Config:  mountConfigOutput{DefaultLeaseTTL: seconds(m.DefaultTTL), MaxLeaseTTL: seconds(m.MaxTTL)},
			Options: m.Options,
		}
		switch {
		case m.Err != nil:
			out.Error = m.Err.Error()
		case m.Disabling:
			out.Error = "being disabled: unmount it again to finish"
		}
		data[m.Path] = out
	}
	writeData(w, err, newResponse(data))
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
// as Vault does: empty (or "system") is zero, the system value; else
// integer seconds or a duration string. A value that is not, or is beyond
// what a duration holds, is recorded in v.
func parseTTL(v *keel.Validation, field, s string) time.Duration {
	if s == "" || s == "system" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
		if n < 0 || n > math.MaxInt64/int64(time.Second) {
			d = -1
		}
	}
	if err != nil || d < 0 {
		v.Add(field, "%q is not a duration between 0 and 292 years", s)
		return 0
	}
	return d
}
