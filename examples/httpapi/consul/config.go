package consul

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/peering"
)

// kindExportedServices is the only kind of config entry served.
const kindExportedServices = "exported-services"

// ExportedServicesEntry is the wire form of peering.ExportedServicesEntry:
// Consul's config entry of kind "exported-services".
type ExportedServicesEntry struct {
	Kind        string
	Name        string
	Partition   string            `json:",omitempty"`
	Services    []ExportedService `json:",omitempty"`
	Meta        map[string]string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// ExportedService is one service of an ExportedServicesEntry.
type ExportedService struct {
	Name      string
	Namespace string            `json:",omitempty"`
	Consumers []ServiceConsumer `json:",omitempty"`
}

// ServiceConsumer is a consumer of an ExportedService; only Peer is
// served (partitions and sameness groups are enterprise features).
type ServiceConsumer struct {
	Partition     string `json:",omitempty"`
	Peer          string `json:",omitempty"`
	SamenessGroup string `json:",omitempty"`
}

// UnmarshalJSON decodes a consumer as Consul does: besides the fields of
// ServiceConsumer, it takes Consul's aliases "peer_name" (Peer) and
// "sameness_group" (SamenessGroup), each used when the field itself is
// empty, and refuses any other field.
func (c *ServiceConsumer) UnmarshalJSON(b []byte) error {
	type plain ServiceConsumer // without this method
	var in struct {
		plain
		PeerName      string `json:"peer_name"`
		SamenessAlias string `json:"sameness_group"`
	}
	if err := unmarshalStrict(b, &in); err != nil {
		return err
	}
	*c = ServiceConsumer(in.plain)
	if c.Peer == "" {
		c.Peer = in.PeerName
	}
	if c.SamenessGroup == "" {
		c.SamenessGroup = in.SamenessAlias
	}
	return nil
}

// configSet serves PUT /v1/config: it stores an exported-services entry
// and answers true, as Consul does. ?cas is not supported. As Consul's,
// the decoding of the body is strict: a field the entry does not have
// answers 400 "Request decoding failed: …", but a kind other than
// exported-services answers 400 naming Kind, whatever its fields.
func (h *Handler) configSet(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		methodNotAllowed(w, http.MethodPut)
		return
	}
	in, err := decodeEntry(w, r)
	if err == nil {
		err = checkToken(r)
	}
	var e *peering.ExportedServicesEntry
	if err == nil {
		e, err = exportedEntry(r, in)
	}
	if err == nil {
		err = h.svc.PutExportedServicesEntry(r.Context(), e)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, true)
}

// decodeEntry reads the config entry of a PUT /v1/config. An entry of
// another kind is returned with its Kind alone, for exportedEntry to
// refuse; an exported-services entry is decoded strictly.
func decodeEntry(w http.ResponseWriter, r *http.Request) (*ExportedServicesEntry, error) {
	raw, err := readBody(w, r)
	in := &ExportedServicesEntry{}
	if err != nil || raw == nil {
		return in, decodeFailed(requestDecodeFailed, err)
	}
	var kind struct{ Kind string }
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, decodeFailed(requestDecodeFailed, err)
	}
	if kind.Kind != kindExportedServices {
		in.Kind = kind.Kind
		return in, nil
	}
	if err := unmarshalStrict(raw, in); err != nil {
		return nil, decodeFailed(requestDecodeFailed, err)
	}
	return in, nil
}

// exportedEntry returns the peering.ExportedServicesEntry of in, the body
// of a PUT /v1/config. The rules of what Consul has and keel does not
// (other kinds, ?cas, namespaces, consumers other than peers) are checked
// here; the entry's own rules (its name, partition, services and peers)
// are package peering's.
func exportedEntry(r *http.Request, in *ExportedServicesEntry) (*peering.ExportedServicesEntry, error) {
	var v keel.Validation
	if in.Kind != kindExportedServices {
		v.Add("Kind", "config entries of kind %q are not supported; only %q", in.Kind, kindExportedServices)
	}
	if r.URL.Query().Has("cas") {
		v.Add("cas", "check-and-set is not supported")
	}
	e := &peering.ExportedServicesEntry{Name: in.Name, Partition: partition(r, in.Partition), Meta: in.Meta}
	for i, svc := range in.Services {
		if svc.Namespace != "" && svc.Namespace != "default" {
			v.Add(fmt.Sprintf("Services[%d].Namespace", i), "namespaces other than \"default\" are not supported")
		}
		out := peering.ExportedService{Name: svc.Name}
		for j, c := range svc.Consumers {
			if c.Peer == "" || c.Partition != "" || c.SamenessGroup != "" {
				v.Add(fmt.Sprintf("Services[%d].Consumers[%d]", i, j), "a consumer must name a Peer, and only a Peer")
			}
			out.Consumers = append(out.Consumers, c.Peer)
		}
		e.Services = append(e.Services, out)
	}
	return e, v.Err()
}

// configGet serves GET /v1/config/exported-services/{name}.
func (h *Handler) configGet(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	if err := checkToken(r); err != nil {
		writeError(w, r, err)
		return
	}
	if kind := r.PathValue("kind"); kind != kindExportedServices {
		writeError(w, r, keel.Invalid("kind", "config entries of kind %q are not supported; only %q", kind, kindExportedServices))
		return
	}
	e, idx, err := h.svc.GetExportedServicesEntry(r.Context(), r.PathValue("name"))
	if err != nil {
		if keel.KindOf(err) == keel.KindNotFound {
			setIndex(w, idx)
		}
		writeError(w, r, err)
		return
	}
	out := &ExportedServicesEntry{
		Kind: kindExportedServices, Name: e.Name, Meta: e.Meta,
		CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex,
	}
	for _, svc := range e.Services {
		ws := ExportedService{Name: svc.Name}
		for _, peer := range svc.Consumers {
			ws.Consumers = append(ws.Consumers, ServiceConsumer{Peer: peer})
		}
		out.Services = append(out.Services, ws)
	}
	setIndex(w, idx)
	writeJSON(w, out)
}
