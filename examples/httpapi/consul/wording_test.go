package consul_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/keelhq/keel"
)

// TestErrorsInConsulWords: package peering starts its messages with
// "peering: " (issue 31); Consul's name no package, so the adapter sends
// them without it, on the client routes and the peer-to-peer paths, and
// the texts stay what they were.
func TestErrorsInConsulWords(t *testing.T) {
	clock := keel.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := newServer(t, "dc1", clock)
	ctx := context.Background()
	if _, _, err := a.client.Peerings().GenerateToken(ctx, api.PeeringGenerateTokenRequest{PeerName: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	root := []string{"X-Cluster-Token", "root-token"}
	const partition = `invalid request: Partition: partitions other than "default" are not supported`
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/v1/peering/missing", "", 404, `peering "missing": not found`},
		{"GET", "/v1/peering/b?partition=eng", "", 400, partition},
		{"GET", "/v1/peerings?partition=eng", "", 400, partition},
		{"DELETE", "/v1/peering/b?partition=eng", "", 400, partition},
		{"POST", "/v1/peering/token", `{"PeerName":"b","Partition":"eng"}`, 400, partition},
		{"POST", "/v1/peering/token", `{"PeerName":"Not_A_Label"}`, 400, `invalid request: PeerName: "Not_A_Label" is not a DNS hostname label (lower-case letters, digits and '-', at most 63, starting and ending alphanumeric)`},
		{"POST", "/v1/peering/establish", `{"PeerName":"b","PeeringToken":"bm90IGEgdG9rZW4="}`, 400, `establish "b": invalid request: PeeringToken: is not a peering token: invalid character 'o' in literal null (expecting 'u')`},
		{"PUT", "/v1/config", `{"Kind":"exported-services","Name":"other"}`, 400, `invalid request: Name: the exported-services entry must be named "default"`},
		{"GET", "/v1/config/exported-services/other", "", 404, `exported-services entry "other": not found`},
		{"POST", "/v1/internal/peering/heartbeat", `{"PeerID":"nobody"}`, 404, `peering id "nobody": not found`},
		{"POST", "/v1/internal/peering/exchange", `{"PeerID":"nobody"}`, 403, `invalid request: PeeringToken: the peering of this token does not exist any more`},
	} {
		status, body := send(t, a, tc.method, tc.path, tc.body, root...)
		if status != tc.status || body != tc.want {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
		if strings.Contains(body, "peering: ") {
			t.Errorf("%s %s: %q names package peering", tc.method, tc.path, body)
		}
	}
	if status, _ := send(t, a, "GET", "/v1/peering/b", "", root...); status != http.StatusOK {
		t.Fatalf("the peering b: %d", status)
	}
}
