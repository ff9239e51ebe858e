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
}

type mountConfigOutput struct {
	DefaultLeaseTTL int64 `json:"default_lease_ttl"`
	MaxLeaseTTL     int64 `json:"max_lease_ttl"`
	ForceNoCache    bool  `json:"force_no_cache"`
}

// listMounts answers GET sys/mounts: the served mounts (a stored mount that
// is not served is logged by the table, not listed, as Vault lists only
// what it mounted).
func (h *Handler) listMounts(w http.ResponseWriter, r *http.Request) {
	mounts, err := h.mounts.List(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	data := make(map[string]any, len(mounts))
	for _, m := range mounts {
		if !m.Served() {
			continue
		}
		data[m.Path] = mountOutput{
			UUID: m.UUID, Type: m.Type, Description: m.Description, Accessor: m.Accessor,
			Config:  mountConfigOutput{DefaultLeaseTTL: int64(m.DefaultTTL / time.Second), MaxLeaseTTL: int64(m.MaxTTL / time.Second)},
			Options: m.Options,
		}
	}
	writeJSON(w, http.StatusOK, newResponse(data))
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
// openldap engine.
func (h *Handler) mount(w http.ResponseWriter, r *http.Request) {
	var in mountInput
	if err := decodeBody(w, r, &in); err != nil {
		writeError(w, err)
		return
	}
	var v keel.Validation
	def, err := parseTTL(in.Config.DefaultLeaseTTL)
	if err != nil {
		v.Add("config.default_lease_ttl", "%v", err)
	}
	maxTTL, err := parseTTL(in.Config.MaxLeaseTTL)
	if err != nil {
		v.Add("config.max_lease_ttl", "%v", err)
	}
	if err := v.Err(); err != nil {
		writeError(w, err)
		return
	}
	_, err = h.mounts.Enable(r.Context(), mount.EnableRequest{
		Path: r.PathValue("path"), Type: in.Type, Description: in.Description,
		Options: in.Options, DefaultTTL: def, MaxTTL: maxTTL,
	})
	writeDone(w, err)
}

// parseTTL reads a TTL as Vault does: empty is zero (the system value),
// integer seconds, or a duration string; a value beyond what a duration
// holds is refused.
func parseTTL(s string) (time.Duration, error) {
	if s == "" || s == "system" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(time.Second) {
			return 0, errTTLRange(s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errTTLRange(s)
	}
	return d, nil
}

type errTTLRange string

func (e errTTLRange) Error() string {
	return strconv.Quote(string(e)) + " is not a duration between 0 and 292 years"
}

// unmount answers DELETE sys/mounts/:path.
func (h *Handler) unmount(w http.ResponseWriter, r *http.Request) {
	writeDone(w, h.mounts.Disable(r.Context(), r.PathValue("path")))
}
