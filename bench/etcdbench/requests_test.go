package etcdbench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// request is what one KV request of the client asked etcd.
type request struct {
	kind     string // "range", "txn", "put" or "delete"
	key      string // range, put, delete: the key (with its test prefix)
	rangeEnd bool   // range, delete: over a range of keys
	atRev    bool   // range: at a given revision
	serial   bool   // range: serializable
	compares int    // txn
	puts     int    // txn, put
	deletes  int    // txn, delete
	ranges   int    // txn: range operations
	bytes    int    // txn, put: bytes of the keys and values put
}

func (r request) String() string {
	switch r.kind {
	case "range":
		return fmt.Sprintf("range(%s, rev=%t, serializable=%t)", r.key, r.atRev, r.serial)
	case "txn":
		return fmt.Sprintf("txn(%d compares, %d puts, %d deletes, %d ranges, %d bytes)", r.compares, r.puts, r.deletes, r.ranges, r.bytes)
	default:
		return fmt.Sprintf("%s(%s, %d bytes)", r.kind, r.key, r.bytes)
	}
}

// recorder records the KV requests of a client when on.
type recorder struct {
	mu   sync.Mutex
	on   bool
	reqs []request
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.reqs = true, nil
}

func (r *recorder) stop() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.reqs
}

func (r *recorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var q request
	switch m := req.(type) {
	case *pb.RangeRequest:
		q = request{kind: "range", key: string(m.Key), rangeEnd: len(m.RangeEnd) > 0, atRev: m.Revision != 0, serial: m.Serializable}
	case *pb.PutRequest:
		q = request{kind: "put", key: string(m.Key), puts: 1, bytes: len(m.Key) + len(m.Value)}
	case *pb.DeleteRangeRequest:
		q = request{kind: "delete", key: string(m.Key), rangeEnd: len(m.RangeEnd) > 0, deletes: 1}
	case *pb.TxnRequest:
		q = request{kind: "txn", compares: len(m.Compare)}
		for _, o := range m.Success {
			switch {
			case o.GetRequestPut() != nil:
				p := o.GetRequestPut()
				q.puts++
				q.bytes += len(p.Key) + len(p.Value)
			case o.GetRequestDeleteRange() != nil:
				q.deletes++
			case o.GetRequestRange() != nil:
				q.ranges++
			}
		}
	}
	if q.kind != "" {
		r.mu.Lock()
		if r.on {
			r.reqs = append(r.reqs, q)
		}
		r.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// recordingClient returns a client of the binary's etcd whose KV requests
// rec records, closed when t ends.
func recordingClient(t *testing.T, rec *recorder) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   etcdtest.Endpoints(t),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(rec.intercept)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// record returns the requests of one run of fn, then runs after.
func record(t *testing.T, rec *recorder, fn, after func(context.Context) error) []request {
	t.Helper()
	ctx := context.Background()
	rec.start()
	err := fn(ctx)
	reqs := rec.stop()
	if err != nil {
		t.Fatal(err)
	}
	if after != nil {
		if err := after(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return reqs
}

// TestRequests checks that each yardstick sends what its keel operation
// needs: the same reads, each linearizable and, after the first, at a given
// revision, then one Txn with as many comparisons, puts and deletes, whose
// puts carry about as many bytes (within 10%: the yardstick's lease ids
// and times are its own). A key that keel reads a second time, at the
// revision it read it at, costs a round trip for nothing (the value cannot
// have changed): the test fails on such a read.
func TestRequests(t *testing.T) {
	rec := &recorder{}
	client := recordingClient(t, rec)
	for _, c := range opCases {
		t.Run(c.name, func(t *testing.T) {
			o := c.setup(t, client)
			var got [2][]request
			for i, fn := range []struct{ run, after func(context.Context) error }{{o.keel, o.keelAfter}, {o.raw, o.rawAfter}} {
				record(t, rec, fn.run, fn.after) // a first run, that warms caches
				got[i] = record(t, rec, fn.run, fn.after)
			}
			raw := got[1]
			keel, again := rereads(got[0])
			t.Logf("keel:     %s", describe(keel))
			if len(again) > 0 {
				t.Errorf("keel reads again, at the same revision, %s: a round trip for a value it has", strings.Join(again, ", "))
			}
			t.Logf("clientv3: %s", describe(raw))
			if err := sameShape(keel, raw); err != nil {
				t.Errorf("the yardstick does not send what keel sends: %v", err)
			}
		})
	}
}

// rereads returns reqs without the reads of a key read before in them, and
// the keys of those reads.
func rereads(reqs []request) (needed []request, again []string) {
	seen := map[string]bool{}
	for _, r := range reqs {
		if r.kind == "range" && !r.rangeEnd {
			if seen[r.key] {
				again = append(again, r.key)
				continue
			}
			seen[r.key] = true
		}
		needed = append(needed, r)
	}
	return needed, again
}

// describe lists reqs, ranges counted rather than listed.
func describe(reqs []request) string {
	var parts []string
	ranges := 0
	for _, r := range reqs {
		if r.kind == "range" {
			ranges++
			continue
		}
		parts = append(parts, r.String())
	}
	return fmt.Sprintf("%d ranges, then %s", ranges, strings.Join(parts, ", "))
}

// unprefixed returns key without the test prefix (etcdtest.Prefix) that
// starts it.
func unprefixed(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	return rest
}

// sameShape returns why raw does not send what keel sends, or nil: the
// same requests, reading and deleting the same keys under their prefixes.
func sameShape(keel, raw []request) error {
	if len(keel) != len(raw) {
		return fmt.Errorf("%d requests, the yardstick %d", len(keel), len(raw))
	}
	for i, k := range keel {
		r := raw[i]
		if k.kind != r.kind || unprefixed(k.key) != unprefixed(r.key) || k.rangeEnd != r.rangeEnd || k.atRev != r.atRev || k.serial != r.serial ||
			k.compares != r.compares || k.puts != r.puts || k.deletes != r.deletes || k.ranges != r.ranges {
			return fmt.Errorf("request %d is %v, the yardstick's %v", i+1, k, r)
		}
		if d := k.bytes - r.bytes; d*10 > k.bytes || -d*10 > k.bytes {
			return fmt.Errorf("request %d puts %d bytes, the yardstick's %d", i+1, k.bytes, r.bytes)
		}
	}
	return nil
}
