package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
)

// TestBrokerGivesUpOnHungFile: a File whose write blocks (its lock held,
// as by a write(2) that does not return) holds no Record longer than the
// timeout, through the File's queue as through any device's write; while
// it stays blocked, records skip it at once; once it answers, the records
// queued meanwhile are written, and the chain holds.
func TestBrokerGivesUpOnHungFile(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b, d := fileBroker(t, &Options{Clock: clock, Timeout: time.Second})
	r := &Record{Type: TypeRequest, Request: &Request{Operation: "update", Path: "secret/app", Data: map[string]any{"password": "hunter2"}}}
	d.mu.Lock() // the file's writer blocks
	done := make(chan error, 1)
	go func() { done <- b.Record(ctx, r) }()
	if err := clock.BlockUntil(ctx, 1); err != nil { // the watchdog waits for the deadline
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Record returned %v before the timeout", err)
	default:
	}
	clock.Advance(time.Second)
	if err := <-done; keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "within 1s") {
		t.Fatalf("Record with a hung file = %v, want kind unavailable after the timeout", err)
	}
	if err := b.Record(ctx, r); keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "still blocked") {
		t.Fatalf("Record while the file's write is blocked = %v, want kind unavailable at once", err)
	}
	d.mu.Unlock()
	keeltest.Until(t, "the file writes again once its blocked write returned", func() bool { return b.Record(ctx, r) == nil })
	got, err := os.ReadFile(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Verify(bytes.NewReader(got)); err != nil || res.Records < 2 {
		t.Errorf("Verify = %+v, %v; want the record given up on and the last, chained", res, err)
	}
}

// TestFileWriterKeptUntilClose: a File's writer goroutine is kept from
// burst to burst (the records of a second burst are written by the same
// goroutine, woken), Close stops it once the records queued are written,
// and a record posted after Close is refused at once, not left waiting
// for a writer that is gone.
func TestFileWriterKeptUntilClose(t *testing.T) {
	ctx := context.Background()
	b, d := fileBroker(t, nil)
	r := &Record{Type: TypeRequest, Request: &Request{Operation: "update", Path: "secret/app", Data: map[string]any{"password": "hunter2"}}}
	if err := b.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	d.q.mu.Lock()
	done := d.q.done
	d.q.mu.Unlock()
	if done == nil {
		t.Fatal("no writer after a record")
	}
	if err := b.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	d.q.mu.Lock()
	same := d.q.done == done
	d.q.mu.Unlock()
	if !same {
		t.Error("a second burst started another writer")
	}
	select {
	case <-done:
		t.Fatal("the writer returned before Close")
	default:
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	default:
		t.Fatal("Close returned before the writer did")
	}
	if err := b.Record(ctx, r); keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Record after Close = %v, want kind unavailable: the device is closed", err)
	}
	got, err := os.ReadFile(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Verify(bytes.NewReader(got)); err != nil || res.Records != 2 {
		t.Errorf("Verify = %+v, %v; want the 2 records, chained", res, err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestFileCloseWritesQueued: records queued when Close is called are
// written (or answered) before Close returns: no Record is left waiting.
func TestFileCloseWritesQueued(t *testing.T) {
	ctx := context.Background()
	b, d := fileBroker(t, nil)
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			r := &Record{Type: TypeRequest, Request: &Request{Operation: "update", Path: "secret/app"}}
			errs <- b.Record(ctx, r)
		}()
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range callers {
		err := <-errs
		if err == nil {
			ok++
		} else if keel.KindOf(err) != keel.KindUnavailable {
			t.Errorf("Record = %v, want nil or kind unavailable", err)
		}
	}
	got, err := os.ReadFile(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Verify(bytes.NewReader(got)); err != nil || res.Records != ok {
		t.Errorf("Verify = %+v, %v; want the %d records written, chained", res, err, ok)
	}
}

// TestBrokerWatchdogDeadlines: the Records waiting for a hung file are
// given up on by one watchdog, each at its own deadline (its start plus
// the timeout, on the fake clock), not all at once; the watchdog returns
// once no Record waits.
func TestBrokerWatchdogDeadlines(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b, d := fileBroker(t, &Options{Clock: clock, Timeout: time.Second})
	waiting := func() int {
		b.watched.Lock()
		defer b.watched.Unlock()
		n := 0
		for c := b.watched.head; c != nil; c = c.next {
			n++
		}
		return n
	}
	record := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- b.Record(ctx, &Record{Type: TypeRequest, Request: &Request{Operation: "update", Path: "secret/app"}})
		}()
		return done
	}
	d.mu.Lock() // the file's writer blocks
	first := record()
	keeltest.Until(t, "the first Record is watched", func() bool { return waiting() == 1 })
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(500 * time.Millisecond)
	second := record()
	keeltest.Until(t, "the second Record is watched", func() bool { return waiting() == 2 })
	clock.Advance(500 * time.Millisecond)
	if err := <-first; keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "within 1s") {
		t.Fatalf("first Record = %v, want kind unavailable after the timeout", err)
	}
	select {
	case err := <-second:
		t.Fatalf("second Record returned %v half a timeout after it started", err)
	default:
	}
	if err := clock.BlockUntil(ctx, 1); err != nil { // the watchdog waits for the second deadline
		t.Fatal(err)
	}
	clock.Advance(500 * time.Millisecond)
	if err := <-second; keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "within 1s") {
		t.Fatalf("second Record = %v, want kind unavailable after its timeout", err)
	}
	keeltest.Until(t, "the watchdog returns when no Record waits", func() bool {
		b.watched.Lock()
		defer b.watched.Unlock()
		return !b.watched.running && b.watched.head == nil
	})
	d.mu.Unlock()
}

// fileBroker returns a Broker of opts with one File enabled, in a file of
// the test's own, closed when the test ends.
func fileBroker(t *testing.T, opts *Options) (*Broker, *File) {
	t.Helper()
	s, err := NewSalt(bytes.Repeat([]byte{7}, SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenFile(filepath.Join(t.TempDir(), "audit.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	b := NewBroker(opts)
	if err := b.Enable("file/", d, s); err != nil {
		t.Fatal(err)
	}
	return b, d
}
