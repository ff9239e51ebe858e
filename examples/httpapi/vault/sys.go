package vault

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/keelhq/keel"
)

// Server describes the program that serves the adapter, for the answers
// of sys/health, sys/seal-status and sys/leader (what `vault status`
// prints) and the running_plugin_version of mount entries. The zero value
// answers the version "dev" and omits the rest, as Vault omits an unknown
// cluster.
type Server struct {
	// Version is the program's version ("v1.2.3"); "" is "dev".
	Version string
	// BuildDate is when the program was built, RFC 3339; "" when
	// unknown.
	BuildDate string
	// ClusterName and ClusterID name the cluster of servers sharing one
	// store (Vault's cluster_name and cluster_id); "" omits them.
	ClusterName, ClusterID string
	// StorageType names the store (Vault's storage_type: "inmem",
	// "raft", …); "" omits it.
	StorageType string
}

// healthData is the body of sys/health: Vault's members, in its order.
type healthData struct {
	Initialized                bool   `json:"initialized"`
	Sealed                     bool   `json:"sealed"`
	Standby                    bool   `json:"standby"`
	PerformanceStandby         bool   `json:"performance_standby"`
	ReplicationPerformanceMode string `json:"replication_performance_mode"`
	ReplicationDRMode          string `json:"replication_dr_mode"`
	ServerTimeUTC              int64  `json:"server_time_utc"`
	Version                    string `json:"version"`
	Enterprise                 bool   `json:"enterprise"`
	ClusterName                string `json:"cluster_name,omitempty"`
	ClusterID                  string `json:"cluster_id,omitempty"`
	EchoDurationMS             int64  `json:"echo_duration_ms"`
	ClockSkewMS                int64  `json:"clock_skew_ms"`
	ReplicationPrimaryCanaryMS int64  `json:"replication_primary_canary_age_ms"`
}

// healthCodes are the query parameters of sys/health that choose the
// status of a state. A keel server is always initialized, unsealed and
// active, so only activecode changes the answer; the others are checked
// all the same, so that a mistake shows.
var healthCodes = []string{"activecode", "standbycode", "sealedcode", "uninitcode",
	"drsecondarycode", "performancestandbycode", "haunhealthycode", "removedcode"}

// healthStatus reads the query of sys/health: the status to answer (200,
// or activecode), or the problems of the query, each naming its
// parameter.
func healthStatus(r *http.Request) (int, error) {
	status := http.StatusOK
	if r.URL.RawQuery == "" {
		return status, nil
	}
	q := r.URL.Query()
	var v keel.Validation
	for _, name := range []string{"standbyok", "perfstandbyok"} {
		if vs, ok := q[name]; ok && vs[0] != "" {
			if _, err := strconv.ParseBool(vs[0]); err != nil {
				v.Add(name, "must be a boolean")
			}
		}
	}
	for _, name := range healthCodes {
		vs, ok := q[name]
		if !ok {
			continue
		}
		code, err := strconv.Atoi(vs[0])
		if err != nil || code < 200 || code > 599 {
			v.Add(name, "must be an HTTP status code from 200 to 599")
			continue
		}
		if name == "activecode" {
			status = code
		}
	}
	return status, v.Err()
}

// health answers sys/health (GET and HEAD) without a token: Vault's 14
// members, the status 200 (or the query's activecode). HEAD answers the
// status and headers alone.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	status, err := healthStatus(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, &healthData{
		Initialized: true, ReplicationPerformanceMode: "disabled", ReplicationDRMode: "disabled",
		ServerTimeUTC: h.clock.Now().Unix(), Version: h.server.Version,
		ClusterName: h.server.ClusterName, ClusterID: h.server.ClusterID,
	})
}

// sealStatusData is the body of sys/seal-status: Vault's members, in its
// order.
type sealStatusData struct {
	Type         string `json:"type"`
	Initialized  bool   `json:"initialized"`
	Sealed       bool   `json:"sealed"`
	T            int    `json:"t"`
	N            int    `json:"n"`
	Progress     int    `json:"progress"`
	Nonce        string `json:"nonce"`
	Version      string `json:"version"`
	BuildDate    string `json:"build_date"`
	Migration    bool   `json:"migration"`
	ClusterName  string `json:"cluster_name,omitempty"`
	ClusterID    string `json:"cluster_id,omitempty"`
	RecoverySeal bool   `json:"recovery_seal"`
	StorageType  string `json:"storage_type,omitempty"`
}

// sealStatus answers GET sys/seal-status without a token: initialized and
// never sealed (a keel store gets its keys at start), with one key share,
// as a Vault development server answers.
func (h *Handler) sealStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET")
		return
	}
	writeJSON(w, http.StatusOK, &sealStatusData{
		Type: "shamir", Initialized: true, T: 1, N: 1, Version: h.server.Version, BuildDate: h.server.BuildDate,
		ClusterName: h.server.ClusterName, ClusterID: h.server.ClusterID, StorageType: h.server.StorageType,
	})
}

// leaderData is the body of sys/leader for a server without high
// availability: Vault's members, in its order.
type leaderData struct {
	HAEnabled                bool   `json:"ha_enabled"`
	IsSelf                   bool   `json:"is_self"`
	ActiveTime               string `json:"active_time"`
	LeaderAddress            string `json:"leader_address"`
	LeaderClusterAddress     string `json:"leader_cluster_address"`
	PerfStandby              bool   `json:"performance_standby"`
	PerfStandbyLastRemoteWAL uint64 `json:"performance_standby_last_remote_wal"`
}

// leader answers GET sys/leader without a token: ha_enabled false. Every
// keel server answers every request (with etcd too: background work has
// leaders, requests do not), so none is a standby.
func leader(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET")
		return
	}
	writeJSON(w, http.StatusOK, &leaderData{ActiveTime: "0001-01-01T00:00:00Z"})
}

// uiMount answers GET sys/internal/ui/mounts/:path, which the vault CLI
// asks before every kv command to learn the kv version of the mount under
// path: the mount's entry (mountInfo) and its path. A path under no mount,
// or under one the caller holds no right on, answers 403 with Vault's
// message, so that the endpoint does not reveal which mounts exist.
func (h *Handler) uiMount(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.PathValue("path"), "/")
	if p == "" {
		writeMessage(w, http.StatusBadRequest, "path not set")
		return
	}
	m, err := h.mounts.MountFor(r.Context(), p)
	if err != nil {
		mp := p
		if !strings.HasSuffix(mp, "/") {
			mp += "/"
		}
		writeMessage(w, http.StatusForbidden, "preflight capability check returned 403, please ensure client's policies grant access to path "+strconv.Quote(mp))
		return
	}
	out := h.mountInfo(&m)
	out.Path = m.Path
	writeJSON(w, http.StatusOK, newResponse(mountSystem, &out))
}
