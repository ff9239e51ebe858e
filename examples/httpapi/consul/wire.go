package consul

import (
	"time"

	"github.com/keelhq/keel/peering"
)

// Peering is the wire form of a peering, with Consul's field names.
type Peering struct {
	ID                  string
	Name                string
	Partition           string            `json:",omitempty"`
	DeletedAt           *time.Time        `json:",omitempty"`
	Meta                map[string]string `json:",omitempty"`
	State               string
	PeerID              string   `json:",omitempty"`
	PeerServerName      string   `json:",omitempty"`
	PeerServerAddresses []string `json:",omitempty"`
	StreamStatus        StreamStatus
	CreateIndex         uint64
	ModifyIndex         uint64
	Remote              Remote
}

// StreamStatus is the wire form of peering.StreamStatus.
type StreamStatus struct {
	ImportedServices []string
	ExportedServices []string
	LastHeartbeat    *time.Time `json:",omitempty"`
	LastReceive      *time.Time `json:",omitempty"`
	LastSend         *time.Time `json:",omitempty"`
}

// Remote is the wire form of peering.Remote.
type Remote struct {
	Partition  string
	Datacenter string
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func wirePeering(p *peering.Peering) *Peering {
	return &Peering{
		ID: p.ID, Name: p.Name, Partition: p.Partition, DeletedAt: timePtr(p.DeletedAt),
		Meta: p.Meta, State: string(p.State), PeerID: p.PeerID,
		PeerServerName: p.PeerServerName, PeerServerAddresses: p.PeerServerAddresses,
		StreamStatus: StreamStatus{
			ImportedServices: p.StreamStatus.ImportedServices,
			ExportedServices: p.StreamStatus.ExportedServices,
			LastHeartbeat:    timePtr(p.StreamStatus.LastHeartbeat),
			LastReceive:      timePtr(p.StreamStatus.LastReceive),
			LastSend:         timePtr(p.StreamStatus.LastSend),
		},
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex,
		Remote: Remote{Partition: p.Remote.Partition, Datacenter: p.Remote.Datacenter},
	}
}
