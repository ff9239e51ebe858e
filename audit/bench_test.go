package audit

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
)

// BenchmarkRecordFile is one record of a kv write (the shape the example
// server writes) to one File, through the Broker (writer goroutine, wait
// bounded by the timeout), and as a yardstick the same work done inline
// by the caller (salted, encoded, chained, written), which a hung file
// would hold: their difference is the price of never hanging; and
// through the Broker from 8 callers at once (4 per core), whose records
// the File writes several at a time. cpu-ns/op
// is the process's CPU time (getrusage) per record.
func BenchmarkRecordFile(b *testing.B) {
	s, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		b.Fatal(err)
	}
	r := &Record{
		Time: time.Now(), Type: TypeRequest,
		Auth: &Auth{ClientToken: "kr.bench-root-token", Accessor: "acc-0123456789", DisplayName: "root", Policies: []string{"root"}},
		Request: &Request{ID: "0b5c5b0e-4d1b-4a55-9b9e-3f0e6c1a2b3c", Operation: "update", Path: "secret/app",
			Data: map[string]any{"password": "hunter2", "user": "app"}, RemoteAddress: "192.0.2.1"},
	}
	open := func(b *testing.B) *File {
		d, err := OpenFile(filepath.Join(b.TempDir(), "audit.log"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { d.Close() })
		return d
	}
	run := func(b *testing.B, record func() error) {
		b.ReportAllocs()
		cpu := keeltest.CPUTime()
		for b.Loop() {
			if err := record(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(keeltest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	b.Run("inline", func(b *testing.B) {
		d := open(b)
		var buf []byte
		run(b, func() error {
			r.Request.enc = nil // a new request's record
			head, err := appendRecordHead(buf[:0], r, s)
			if err != nil {
				return err
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if err := d.ready(); err != nil {
				return err
			}
			jobs := [1]job{{head: head}}
			batch, seq, last := d.chain(jobs[:])
			buf = jobs[0].head
			return d.append(batch, seq, last)
		})
	})
	b.Run("broker", func(b *testing.B) {
		br := NewBroker(nil)
		if err := br.Enable("file/", open(b), s); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		run(b, func() error {
			r.Request.enc = nil // a new request's record
			return br.Record(ctx, r)
		})
	})
	b.Run("broker-8-callers", func(b *testing.B) {
		br := NewBroker(nil)
		if err := br.Enable("file/", open(b), s); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(4)
		cpu := keeltest.CPUTime()
		b.RunParallel(func(pb *testing.PB) {
			r, q := *r, *r.Request // a Request is recorded by one Record at a time
			r.Request = &q
			for pb.Next() {
				q.enc = nil // a new request's record
				if err := br.Record(ctx, &r); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(keeltest.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
}
