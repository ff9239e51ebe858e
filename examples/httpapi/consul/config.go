package consul

import (
	"context"
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

// configSet serves PUT /v1/config: it stores an exported-services entry
// and answers true, as Consul does. ?cas is not supported.
func (h *Handler) configSet(w http.ResponseWriter, r *http.Request) {
	serve(w, r, http.MethodPut, func(ctx context.Context, in *ExportedServicesEntry) (bool, error) {
		e, err := exportedEntry(r, in)
		if err != nil {
			return false, err
		}
		return true, h.svc.SetExportedServicesEntry(ctx, e)
	})
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
	if kind := r.PathValue("kind"); kind != kindExportedServices {
		writeError(w, keel.Invalid("kind", "config entries of kind %q are not supported; only %q", kind, kindExportedServices))
		return
	}
	e, idx, err := h.svc.ExportedServicesEntry(r.Context(), r.PathValue("name"))
	if err != nil {
		if keel.KindOf(err) == keel.KindNotFound {
			setIndex(w, idx)
		}
		writeError(w, err)
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
