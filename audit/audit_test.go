package audit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/audit"
	"github.com/keelhq/keel/internal/keeltest"
)

func salt(t *testing.T) *audit.Salt {
	t.Helper()
	s, err := audit.NewSalt(bytes.Repeat([]byte{7}, audit.SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(i int) *audit.Record {
	return &audit.Record{
		Time: time.Date(2026, 11, 27, 12, 0, i, 0, time.UTC),
		Type: audit.TypeRequest,
		Auth: &audit.Auth{ClientToken: "kr.root", DisplayName: "root", Policies: []string{"root"}},
		Request: &audit.Request{
			Operation: "update", Path: "secret/app", MountType: "kv",
			Data: map[string]any{"password": "hunter2", "n": float64(i)},
		},
	}
}

// TestSaltHidesSecrets: the token, the accessor and every string of the
// data, at any depth, are replaced by their HMAC; the rest stays clear, and
// the record given is not changed.
func TestSaltHidesSecrets(t *testing.T) {
	s := salt(t)
	r := &audit.Record{
		Type: audit.TypeResponse,
		Auth: &audit.Auth{ClientToken: "kr.tok", Accessor: "acc", DisplayName: "app", Policies: []string{"p"}},
		Request: &audit.Request{Operation: "read", Path: "secret/app", RemoteAddress: "10.0.0.1",
			Data: map[string]any{"nested": map[string]any{"pw": "deep"}, "list": []any{"a", 1.5, true, nil}}},
		Response: &audit.Response{Data: map[string]any{"password": "hunter2", "ttl": float64(60), "odd": struct{ S string }{"hidden"}}},
	}
	got := s.Apply(r)
	for _, v := range []string{got.Auth.ClientToken, got.Auth.Accessor, got.Response.Data["password"].(string),
		got.Request.Data["nested"].(map[string]any)["pw"].(string), got.Request.Data["list"].([]any)[0].(string), got.Response.Data["odd"].(string)} {
		if !strings.HasPrefix(v, "hmac-sha256:") {
			t.Errorf("secret string left as %q, want its HMAC", v)
		}
	}
	if got.Response.Data["password"] != s.Hash("hunter2") {
		t.Errorf("password hashed to %v, want Hash's %v", got.Response.Data["password"], s.Hash("hunter2"))
	}
	if got.Auth.DisplayName != "app" || got.Auth.Policies[0] != "p" || got.Request.Path != "secret/app" ||
		got.Request.RemoteAddress != "10.0.0.1" || got.Response.Data["ttl"] != float64(60) || got.Request.Data["list"].([]any)[1] != 1.5 {
		t.Errorf("clear fields changed: %+v %+v %+v", got.Auth, got.Request, got.Response)
	}
	if r.Auth.ClientToken != "kr.tok" || r.Response.Data["password"] != "hunter2" {
		t.Error("Apply changed the record it was given")
	}
	other, err := audit.NewSalt(bytes.Repeat([]byte{8}, audit.SaltSize))
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash("hunter2") == s.Hash("hunter2") {
		t.Error("two salts hash a value alike")
	}
	if _, err := audit.NewSalt([]byte("short")); keel.KindOf(err) != keel.KindInvalid {
		t.Errorf("NewSalt of 5 bytes = %v, want kind invalid", err)
	}
}

// writeLog writes n records through a new File at path and returns its
// lines.
func writeLog(t *testing.T, path string, n int) []string {
	t.Helper()
	d, err := audit.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range n {
		if err := d.Write(salt(t).Apply(record(i))); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")[:n]
}

// TestFileChainVerifies: a log written by a File verifies, with its count,
// first and last Seq, and the last hash the device reports; the file holds
// no plaintext secret.
func TestFileChainVerifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	d, err := audit.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := d.Write(salt(t).Apply(record(i))); err != nil {
			t.Fatal(err)
		}
	}
	seq, hash := d.Last()
	d.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("kr.root")) {
		t.Errorf("the log holds a secret in the clear:\n%s", b)
	}
	res, err := audit.Verify(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 5 || res.FirstSeq != 1 || res.LastSeq != 5 || seq != 5 || res.LastHash != hash {
		t.Errorf("Verify = %+v; device's last = %d %s", res, seq, hash)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestVerifyFindsBreaks: one byte changed, one line removed, two lines
// swapped and the file cut each make Verify fail, naming the line.
func TestVerifyFindsBreaks(t *testing.T) {
	lines := writeLog(t, filepath.Join(t.TempDir(), "audit.log"), 6)
	edited := slices(lines)
	edited[2] = strings.Replace(edited[2], `"update"`, `"updatE"`, 1)
	removed := append(slices(lines[:2]), lines[3:]...)
	swapped := slices(lines)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	whole := strings.Join(lines, "")
	for _, c := range []struct {
		name string
		log  string
		line int
		says string
	}{
		{"one byte changed in line 3", strings.Join(edited, ""), 3, "edited"},
		{"line 3 removed", strings.Join(removed, ""), 3, "missing"},
		{"lines 3 and 4 swapped", strings.Join(swapped, ""), 3, "missing"},
		{"cut within line 5", whole[:len(strings.Join(lines[:4], ""))+10], 5, "truncated"},
		{"a line that is not a record", strings.Join(lines[:2], "") + "{}\n", 3, "not an audit record"},
	} {
		_, err := audit.Verify(strings.NewReader(c.log))
		var be *audit.BreakError
		if !errors.As(err, &be) || be.Line != c.line || !strings.Contains(be.Reason, c.says) || keel.KindOf(err) != keel.KindInvalid {
			t.Errorf("%s: Verify = %v, want a break at line %d saying %q", c.name, err, c.line, c.says)
		}
	}
}

func slices(s []string) []string { return append([]string(nil), s...) }

// TestFileFollowsRotation: when the file is renamed away, the next record
// goes to a new file at the path, and the chain goes on across the two;
// after a deletion, likewise; Reopen does it at once.
func TestFileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	clock := keel.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	d, err := audit.OpenFile(path, &audit.FileOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	write := func(i int) {
		t.Helper()
		if err := d.Write(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	write(1)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // the next write looks at the path
	write(2)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	write(3)
	write(4)
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	if err := d.Reopen(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Reopen did not create the file: %v", err)
	}
	write(5)
	var files []io.Reader
	for _, p := range []string{path + ".1", path + ".2", path} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	res, err := audit.Verify(io.MultiReader(files...))
	// Record 3 went to the deleted file.
	var be *audit.BreakError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "records 3 to 3 are missing") {
		t.Fatalf("Verify of the rotated files without the deleted one = %+v, %v; want record 3 missing", res, err)
	}
	f2, _ := os.ReadFile(path + ".2")
	f3, _ := os.ReadFile(path)
	res, err = audit.Verify(io.MultiReader(bytes.NewReader(f2), bytes.NewReader(f3)))
	if err != nil || res.FirstSeq != 4 || res.LastSeq != 6 {
		t.Errorf("Verify of the last two files = %+v, %v; want records 4 to 6", res, err)
	}
}

// TestOpenFileContinuesChain: a device opened on an existing log goes on
// from its last record; one opened on a log cut within a record refuses.
func TestOpenFileContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, 3)
	writeLog(t, path, 2)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := audit.Verify(bytes.NewReader(b)); err != nil || res.Records != 5 || res.LastSeq != 5 {
		t.Fatalf("Verify after a second open = %+v, %v; want 5 records", res, err)
	}
	if err := os.WriteFile(path, b[:len(b)-7], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.OpenFile(path, nil); keel.KindOf(err) != keel.KindInvalid || !strings.Contains(err.Error(), "ends within a record") {
		t.Errorf("OpenFile of a cut log = %v, want kind invalid saying so", err)
	}
}

// TestFileUnwritableThenRecovers: once the device has looked at its path
// (a second later, on its clock) and found it cannot be written (a
// directory stands there), writes fail with kind unavailable, every one;
// once it can again, the device writes without being opened anew, and the
// chain holds.
func TestFileUnwritableThenRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	clock := keel.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	d, err := audit.OpenFile(path, &audit.FileOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(record(0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := d.Write(record(1)); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("Write while the path is a directory = %v, want kind unavailable", err)
	}
	// Found unwritable, the path is looked at again at every write.
	if err := d.Write(record(1)); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("second Write while the path is a directory, no time passed = %v, want kind unavailable", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(record(2)); err != nil {
		t.Fatalf("Write once the path is free again = %v", err)
	}
	a, _ := os.ReadFile(path + ".1")
	b, _ := os.ReadFile(path)
	if res, err := audit.Verify(bytes.NewReader(append(a, b...))); err != nil || res.Records != 2 || res.LastSeq != 2 {
		t.Errorf("Verify = %+v, %v; want records 1 and 2, the failed write not counted", res, err)
	}
}

// blockingDevice blocks every Write until release is closed.
type blockingDevice struct {
	release chan struct{}
	wrote   chan *audit.Record
}

func (d *blockingDevice) Write(r *audit.Record) error {
	<-d.release
	d.wrote <- r
	return nil
}

type failingDevice struct{}

func (failingDevice) Write(*audit.Record) error { return errors.New("disk full") }

type memDevice struct {
	mu  sync.Mutex
	got []*audit.Record
}

func (d *memDevice) Write(r *audit.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, r)
	return nil
}

// TestBrokerConcurrentRecords: records sent at once to one device all
// succeed: a write in progress is not a blocked one.
func TestBrokerConcurrentRecords(t *testing.T) {
	ctx := context.Background()
	b := audit.NewBroker(nil)
	mem := &memDevice{}
	if err := b.Enable("mem/", mem, salt(t)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 100 {
				if err := b.Record(ctx, record(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(mem.got) != 800 {
		t.Errorf("the device got %d records, want 800", len(mem.got))
	}
}

// TestBrokerFailsClosed: with no device, Record succeeds; with devices of
// which none writes, it fails with kind unavailable naming them; one that
// writes is enough; each device gets the record salted with its own salt.
// Failures counts the records that failed, by type.
func TestBrokerFailsClosed(t *testing.T) {
	ctx := context.Background()
	b := audit.NewBroker(nil)
	if err := b.Record(ctx, record(0)); err != nil {
		t.Fatalf("Record with no device = %v", err)
	}
	if err := b.Enable("file/", failingDevice{}, salt(t)); err != nil {
		t.Fatal(err)
	}
	err := b.Record(ctx, record(0))
	if keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), `device "file/": disk full`) {
		t.Fatalf("Record with a failing device = %v, want kind unavailable naming it", err)
	}
	resp := record(0)
	resp.Type = audit.TypeResponse
	if err := b.Record(ctx, resp); err == nil {
		t.Fatal("Record of a response with a failing device succeeded")
	}
	if req, res := b.Failures(); req != 1 || res != 1 {
		t.Fatalf("Failures = %d requests, %d responses; want 1 and 1", req, res)
	}
	mem := &memDevice{}
	if err := b.Enable("mem/", mem, salt(t)); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, record(0)); err != nil {
		t.Fatalf("Record with one device of two working = %v", err)
	}
	if len(mem.got) != 1 || mem.got[0].Request.Data["password"] != salt(t).Hash("hunter2") {
		t.Errorf("the device got %+v, want the salted record", mem.got)
	}
	if req, res := b.Failures(); req != 1 || res != 1 {
		t.Errorf("Failures after a record one device wrote = %d, %d; want 1 and 1 still", req, res)
	}
	if h, err := b.Hash("mem/", "hunter2"); err != nil || h != salt(t).Hash("hunter2") {
		t.Errorf("Hash = %q, %v", h, err)
	}
	if err := b.Enable("mem/", mem, salt(t)); keel.KindOf(err) != keel.KindAlreadyExists {
		t.Errorf("Enable of a name enabled = %v, want kind already exists", err)
	}
	if err := b.Enable("", nil, nil); len(keel.FieldErrors(err)) != 3 {
		t.Errorf("Enable with nothing = %v, want three field errors", err)
	}
	if got := b.Devices(); len(got) != 2 || got[0] != "file/" || got[1] != "mem/" {
		t.Errorf("Devices = %v", got)
	}
	if _, err := b.Disable("file/"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Disable("file/"); keel.KindOf(err) != keel.KindNotFound {
		t.Errorf("Disable of a name not enabled = %v, want kind not found", err)
	}
}

// TestBrokerGivesUpOnHungDevice: a device that blocks is given up on
// after the timeout (on the fake clock), with kind unavailable; while its
// write stays blocked, records skip it at once; once it answers, it writes
// again.
func TestBrokerGivesUpOnHungDevice(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	b := audit.NewBroker(&audit.Options{Clock: clock, Timeout: time.Second})
	dev := &blockingDevice{release: make(chan struct{}), wrote: make(chan *audit.Record, 4)}
	if err := b.Enable("file/", dev, salt(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Record(ctx, record(0)) }()
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
		t.Fatalf("Record with a hung device = %v, want kind unavailable after the timeout", err)
	}
	// The write is still blocked: the next record gives up at once,
	// with no time passing.
	if err := b.Record(ctx, record(1)); keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), "still blocked") {
		t.Fatalf("Record while the device's write is blocked = %v, want kind unavailable at once", err)
	}
	close(dev.release)
	<-dev.wrote // the first write completes
	keeltest.Until(t, "the device writes again once its blocked write returned", func() bool { return b.Record(ctx, record(2)) == nil })
}

// TestBrokerFileConcurrentRecordsChain: records sent at once through a
// Broker to a File, which writes those queued together in one write, all
// succeed and form one chain that verifies, ending where the File says.
func TestBrokerFileConcurrentRecordsChain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.log")
	d, err := audit.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := audit.NewBroker(nil)
	if err := b.Enable("file/", d, salt(t)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 50 {
				if err := b.Record(ctx, record(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := audit.Verify(f)
	seq, last := d.Last()
	if err != nil || res.Records != 400 || res.LastSeq != 400 || seq != 400 || res.LastHash != last {
		t.Errorf("Verify = %+v, %v; File.Last = %d, %s; want 400 records ending at the File's last", res, err, seq, last)
	}
}
