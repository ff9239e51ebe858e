// Command floorbench measures keel's example server against the floor
// (package floor: a bare net/http server over a map behind a mutex, with
// Vault's kv version 1 routes), in one run, under the same vault/api load
// (issue 32).
//
// For each server GOMAXPROCS of -procs it starts three processes with that
// GOMAXPROCS: keel's example server on the memory store (keel-mem), the
// same on a bbolt file with fsync (keel-bolt), and the floor (this binary,
// re-executed with -serve-floor). Then, -reps times, for each operation, it
// drives each server in turn for -dur with -workers workers of the official
// client (github.com/hashicorp/vault/api), the floor between the two keel
// servers (their order alternates from one repetition to the next), and
// records ops/s and the server's CPU per operation (user + system, from
// /proc/<pid>/stat; 10 ms ticks, so give a point a few seconds).
//
// Operations: kv write, read (of the keys just written), delete (of them),
// list (of a folder of -list-keys keys); on keel also the lease operations
// of a kv mount with leased_passthrough (as bench/http.sh mounts it): a
// leased read (one lease issued), sys/leases/renew, sys/leases/revoke of
// the leases just issued. The floor has no leases: their ratios are taken
// against the floor's read (leased read) and write (renew, revoke: a PUT
// with a small JSON body, as theirs).
//
// With -profile DIR it also takes, during each point of keel-mem, keel-bolt
// and the floor at the first level of -procs, a CPU profile (the servers' -pprof
// listener) and the allocations of the point (two snapshots of
// /debug/pprof/allocs); read them with
//
//	go tool pprof -top DIR/keel-mem-write.cpu.pprof
//	go tool pprof -top -sample_index=alloc_space -base DIR/keel-mem-write.allocs0.pprof DIR/keel-mem-write.allocs1.pprof
//
// Run it from the bench module:
//
//	go run ./floorbench                       # builds ../examples/server
//	go run ./floorbench -procs 1 -dur 3s -reps 1 -profile /tmp/prof
//	go run ./floorbench -server /tmp/old-server -targets keel-mem,floor,old-mem
//	go run ./floorbench -old-server /tmp/old-server -targets keel-bolt,floor,old-bolt -workers 64 -ops write
//
// It only talks to loopback addresses.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // the floor's profiles (-profile)
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	vault "github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/bench/floor"
	"github.com/keelhq/keel/bench/internal/procstat"
)

const token = "ROOT"

type config struct {
	procs      []int
	dur        time.Duration
	reps       int
	workers    int
	listKeys   int
	server     string // keel server binary; "": built from ../examples/server
	oldServer  string // a second keel binary, targets old-mem and old-bolt
	targets    []string
	ops        []string // the operations run, in their order
	profileDir string
	serveFloor string // internal: serve the floor on this address
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "floorbench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	var procs, targets, ops string
	fs := flag.NewFlagSet("floorbench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&procs, "procs", "1,2,all", "comma-separated server `GOMAXPROCS` values; all: the number of cores")
	fs.DurationVar(&c.dur, "dur", 2*time.Second, "duration of one point")
	fs.IntVar(&c.reps, "reps", 2, "repetitions of every point")
	fs.IntVar(&c.workers, "workers", 32, "concurrent clients")
	fs.IntVar(&c.listKeys, "list-keys", 10000, "keys in the listed folder")
	fs.StringVar(&c.server, "server", "", "keel example server `binary`; empty: go build ../examples/server")
	fs.StringVar(&c.oldServer, "old-server", "", "a second keel server `binary` (an older build), targets old-mem and old-bolt (on a bbolt file)")
	fs.StringVar(&targets, "targets", "keel-mem,floor,keel-bolt", "comma-separated targets, in the order of the first repetition: keel-mem, keel-bolt, floor, old-mem, old-bolt")
	fs.StringVar(&ops, "ops", strings.Join(append(slices.Clone(kvOps), leaseOps...), ","), "comma-separated `operations` to run (read needs write, delete needs write, renew and revoke need leased-read)")
	fs.StringVar(&c.profileDir, "profile", "", "write CPU and allocation profiles of keel-mem, keel-bolt and the floor (first -procs level) into this `directory`")
	fs.StringVar(&c.serveFloor, "serve-floor", "", "internal: serve the floor on this `address` and nothing else")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	seen := map[int]bool{}
	for _, p := range strings.Split(procs, ",") {
		n := runtime.NumCPU()
		if p = strings.TrimSpace(p); p != "all" {
			var err error
			if n, err = strconv.Atoi(p); err != nil || n < 1 {
				return c, fmt.Errorf("-procs: bad value %q", p)
			}
		}
		if !seen[n] { // "2,all" on 2 cores is one level
			seen[n] = true
			c.procs = append(c.procs, n)
		}
	}
	c.targets = strings.Split(targets, ",")
	for _, t := range c.targets {
		switch t {
		case "keel-mem", "keel-bolt", "floor":
		case "old-mem", "old-bolt":
			if c.oldServer == "" {
				return c, fmt.Errorf("target %s needs -old-server", t)
			}
		default:
			return c, fmt.Errorf("-targets: unknown target %q", t)
		}
	}
	for _, op := range strings.Split(ops, ",") {
		if !slices.Contains(kvOps, op) && !slices.Contains(leaseOps, op) {
			return c, fmt.Errorf("-ops: unknown operation %q", op)
		}
	}
	for _, op := range append(slices.Clone(kvOps), leaseOps...) { // in their order
		if slices.Contains(strings.Split(ops, ","), op) {
			c.ops = append(c.ops, op)
		}
	}
	if c.dur <= 0 || c.reps < 1 || c.workers < 1 || c.listKeys < 1 {
		return c, errors.New("-dur, -reps, -workers and -list-keys must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	if cfg.serveFloor != "" {
		return serveFloor(ctx, cfg.serveFloor)
	}
	work, err := os.MkdirTemp("", "floorbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if cfg.server == "" {
		cfg.server = filepath.Join(work, "keel-server")
		if err := buildServer(ctx, cfg.server); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return err
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "# floorbench %s %s nproc=%d loadavg %s# server GOMAXPROCS %v, %d workers, %v per point, %d reps, targets %v\n",
		time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.NumCPU(), load, cfg.procs, cfg.workers, cfg.dur, cfg.reps, cfg.targets)
	b := &bench{cfg: cfg, out: out}
	fmt.Fprintln(out, "procs rep target     op            ops   errs     ops/s  srvCPUus other%")
	for li, p := range cfg.procs {
		if err := b.level(ctx, work, self, p, li == 0 && cfg.profileDir != ""); err != nil {
			return err
		}
	}
	b.summary()
	return ctx.Err()
}

// buildServer builds ./examples/server of the workspace this command runs in.
func buildServer(ctx context.Context, bin string) error {
	gowork, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return fmt.Errorf("go env GOWORK: %w", err)
	}
	w := strings.TrimSpace(string(gowork))
	if w == "" || w == "off" {
		return errors.New("not inside keel's go.work: give -server")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/server")
	cmd.Dir = filepath.Dir(w)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building examples/server: %w", err)
	}
	return nil
}

// serveFloor is the floor's process.
func serveFloor(ctx context.Context, addr string) error {
	if pp := os.Getenv("FLOORBENCH_PPROF"); pp != "" {
		go http.ListenAndServe(pp, http.DefaultServeMux) //nolint:errcheck // profiling only
	}
	srv := &http.Server{Addr: addr, Handler: floor.New(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// server is one started target.
type server struct {
	name  string
	cmd   *exec.Cmd
	addr  string // host:port
	pprof string // host:port of its pprof listener; "": none
	lg    *vault.Logical
	keel  bool
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (b *bench) start(ctx context.Context, work, self, name string, procs int, profile bool) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, addr: addr}
	if profile {
		if s.pprof, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	var cmd *exec.Cmd
	switch name {
	case "floor":
		cmd = exec.Command(self, "-serve-floor", addr)
		if s.pprof != "" {
			cmd.Env = append(cmd.Env, "FLOORBENCH_PPROF="+s.pprof)
		}
	default:
		s.keel = true
		bin, data := b.cfg.server, "memory"
		if name == "old-mem" || name == "old-bolt" {
			bin = b.cfg.oldServer
		}
		if name == "keel-bolt" || name == "old-bolt" {
			data = filepath.Join(work, fmt.Sprintf("%s-%d.db", name, procs))
		}
		args := []string{"-addr", addr, "-root-token", token, "-data", data}
		if s.pprof != "" {
			args = append(args, "-pprof", s.pprof)
		}
		cmd = exec.Command(bin, args...)
	}
	cmd.Env = append(cmd.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	logf, err := os.Create(filepath.Join(work, fmt.Sprintf("%s-%d.log", name, procs)))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.cmd = cmd
	if err := waitUp(ctx, "http://"+addr+"/v1/sys/health"); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s did not start (log: %s): %w", name, logf.Name(), err)
	}
	vc := vault.DefaultConfig()
	vc.Address = "http://" + addr
	vc.MaxRetries = 0 // an error counts, it is not retried away
	vc.Timeout = time.Minute
	tr, ok := vc.HttpClient.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("the vault client's transport is not an *http.Transport")
	}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	c, err := vault.NewClient(vc)
	if err != nil {
		s.stop()
		return nil, err
	}
	c.SetToken(token)
	s.lg = c.Logical()
	return s, nil
}

func waitUp(ctx context.Context, url string) error {
	var err error
	for range 1000 {
		var resp *http.Response
		if resp, err = http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return err
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }() //nolint:errcheck // its status does not matter
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill() //nolint:errcheck // as above
		<-done
	}
}

// ---------------------------------------------------------------- the load

type bench struct {
	cfg     config
	out     io.Writer
	results []result
}

type result struct {
	procs, rep int
	target, op string
	ops        int
	errs       int64
	opsPerS    float64
	cpuUS      float64 // server CPU µs per op
	otherPct   float64
	note       string
}

// kvOps and leaseOps are the operations, in the order they run.
var (
	kvOps    = []string{"write", "read", "delete", "list"}
	leaseOps = []string{"leased-read", "renew", "revoke"}
)

func secretData() map[string]any {
	return map[string]any{
		"username": "svc-app-01",
		"password": "p4ssw0rd-0123456789abcdef",
		"url":      "https://db.internal.example:5432/app",
	}
}

const (
	listFolder = "secret/list10k"
	leasedPath = "leased/lease/s"
)

// level starts the targets with GOMAXPROCS procs and runs every point.
func (b *bench) level(ctx context.Context, work, self string, procs int, profile bool) error {
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range b.cfg.targets {
		s, err := b.start(ctx, work, self, name, procs, profile && (name == "keel-mem" || name == "keel-bolt" || name == "floor"))
		if err != nil {
			return err
		}
		servers = append(servers, s)
		if err := b.prepare(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for rep := 1; rep <= b.cfg.reps; rep++ {
		order := slices.Clone(servers)
		if rep%2 == 0 {
			slices.Reverse(order)
		}
		written := map[string]int{}
		var leases = map[string][]string{}
		for _, op := range b.cfg.ops {
			for _, s := range order {
				if !s.keel && slices.Contains(leaseOps, op) {
					continue
				}
				prof := profile && rep == 1 && s.pprof != ""
				r := b.point(ctx, s, procs, rep, op, prof, written, leases)
				if err := ctx.Err(); err != nil {
					return err
				}
				b.record(r)
			}
		}
	}
	return nil
}

// prepare fills the listed folder, and on keel mounts leased/ and writes
// the secret whose reads issue leases.
func (b *bench) prepare(ctx context.Context, s *server) error {
	if s.keel {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/v1/sys/mounts/leased",
			strings.NewReader(`{"type":"kv","options":{"leased_passthrough":"true"}}`))
		if err != nil {
			return err
		}
		req.Header.Set("X-Vault-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("mounting leased/: %s", resp.Status)
		}
		d := secretData()
		d["ttl"] = "1h"
		if _, err := s.lg.WriteWithContext(ctx, leasedPath, d); err != nil {
			return err
		}
		sec, err := s.lg.ReadWithContext(ctx, leasedPath)
		if err != nil || sec == nil || sec.LeaseID == "" {
			return fmt.Errorf("reads of %s issue no lease: %v, %v", leasedPath, sec, err)
		}
	}
	if !slices.Contains(b.cfg.ops, "list") {
		return nil
	}
	r := b.drive(ctx, s, b.cfg.listKeys, time.Minute, func(ctx context.Context, i int) error {
		_, err := s.lg.WriteWithContext(ctx, fmt.Sprintf("%s/key-%05d", listFolder, i), secretData())
		return err
	})
	if r.errs > 0 || r.ops != b.cfg.listKeys {
		return fmt.Errorf("filling %s: %d of %d, %d errors: %s", listFolder, r.ops, b.cfg.listKeys, r.errs, r.note)
	}
	return nil
}

// point runs one operation on one server for cfg.dur (deletes and
// revocations: until the keys or leases of the point before are gone).
func (b *bench) point(ctx context.Context, s *server, procs, rep int, op string, prof bool,
	written map[string]int, leases map[string][]string) result {
	key := func(i int) string { return fmt.Sprintf("secret/load/p%d-r%d/k%07d", procs, rep, i) }
	n, long := -1, b.cfg.dur
	var fn func(context.Context, int) error
	var mu sync.Mutex
	var ids []string
	switch op {
	case "write":
		fn = func(ctx context.Context, i int) error {
			_, err := s.lg.WriteWithContext(ctx, key(i), secretData())
			return err
		}
	case "read":
		w := max(written[s.name], 1)
		fn = func(ctx context.Context, i int) error {
			sec, err := s.lg.ReadWithContext(ctx, key(i%w))
			if err == nil && (sec == nil || len(sec.Data) != 3) {
				err = fmt.Errorf("read %s: %v", key(i%w), sec)
			}
			return err
		}
	case "delete":
		n, long = written[s.name], 20*b.cfg.dur
		fn = func(ctx context.Context, i int) error {
			_, err := s.lg.DeleteWithContext(ctx, key(i))
			return err
		}
	case "list":
		fn = func(ctx context.Context, _ int) error {
			sec, err := s.lg.ListWithContext(ctx, listFolder)
			if err == nil {
				var keys []any
				if sec != nil {
					keys, _ = sec.Data["keys"].([]any)
				}
				if len(keys) != b.cfg.listKeys {
					err = fmt.Errorf("list: %d keys, want %d", len(keys), b.cfg.listKeys)
				}
			}
			return err
		}
	case "leased-read":
		fn = func(ctx context.Context, _ int) error {
			sec, err := s.lg.ReadWithContext(ctx, leasedPath)
			if err == nil && (sec == nil || sec.LeaseID == "") {
				err = errors.New("the read issued no lease")
			}
			if err == nil {
				mu.Lock()
				ids = append(ids, sec.LeaseID)
				mu.Unlock()
			}
			return err
		}
	case "renew":
		l := leases[s.name]
		fn = func(ctx context.Context, i int) error {
			if len(l) == 0 {
				return errors.New("no lease to renew")
			}
			_, err := s.lg.WriteWithContext(ctx, "sys/leases/renew", map[string]any{"lease_id": l[i%len(l)], "increment": 3600})
			return err
		}
	case "revoke":
		l := leases[s.name]
		n, long = len(l), 20*b.cfg.dur
		fn = func(ctx context.Context, i int) error {
			_, err := s.lg.WriteWithContext(ctx, "sys/leases/revoke", map[string]any{"lease_id": l[i]})
			return err
		}
	}
	var stopProf func()
	if prof {
		stopProf = b.profile(ctx, s, op)
	}
	r := b.drive(ctx, s, n, long, fn)
	if stopProf != nil {
		stopProf()
	}
	r.procs, r.rep, r.target, r.op = procs, rep, s.name, op
	switch op {
	case "write":
		written[s.name] = r.ops
	case "leased-read":
		leases[s.name] = ids
	}
	return r
}

// profile starts a CPU profile of s lasting the point and takes the first
// allocation snapshot; the function it returns takes the second, and
// waits for the CPU profile.
func (b *bench) profile(ctx context.Context, s *server, op string) func() {
	base := filepath.Join(b.cfg.profileDir, s.name+"-"+op)
	get := func(url, file string) {
		resp, err := http.Get(url)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %s", url, resp.Status)
			}
			if err == nil {
				err = os.WriteFile(file, body, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floorbench: profile:", err)
		}
	}
	get("http://"+s.pprof+"/debug/pprof/allocs", base+".allocs0.pprof")
	secs := max(1, int(b.cfg.dur/time.Second))
	var wg sync.WaitGroup
	wg.Go(func() { get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, secs), base+".cpu.pprof") })
	return func() {
		get("http://"+s.pprof+"/debug/pprof/allocs", base+".allocs1.pprof")
		wg.Wait()
	}
}

// drive runs fn(ctx, i) for i = 0, 1, … (below n when n ≥ 0) over the
// workers until dur has passed, and measures it.
func (b *bench) drive(ctx context.Context, s *server, n int, dur time.Duration, fn func(context.Context, int) error) result {
	deadline := time.Now().Add(dur)
	var next, done, errs atomic.Int64
	var firstErr atomic.Pointer[string]
	cpu0, busy0, self0, t0 := procCPU(s.cmd.Process.Pid), procstat.MachineBusy(), procstat.Self(), time.Now()
	var wg sync.WaitGroup
	for range b.cfg.workers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if n >= 0 && i >= n {
					return
				}
				if err := fn(ctx, i); err != nil && errs.Add(1) == 1 {
					msg := err.Error()
					firstErr.Store(&msg)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	srv := procCPU(s.cmd.Process.Pid) - cpu0
	r := result{ops: int(done.Load()), errs: errs.Load()}
	if r.ops > 0 {
		r.opsPerS = float64(r.ops) / wall.Seconds()
		r.cpuUS = float64(srv) / float64(time.Microsecond) / float64(r.ops)
	}
	other := procstat.MachineBusy() - busy0 - srv - (procstat.Self() - self0)
	r.otherPct = max(0, 100*other.Seconds()/(wall.Seconds()*float64(runtime.NumCPU())))
	if n >= 0 && r.ops < n {
		r.note = fmt.Sprintf("stopped at %d of %d;", r.ops, n)
	}
	if m := firstErr.Load(); m != nil {
		r.note = strings.TrimSpace(r.note + " first error: " + *m)
	}
	return r
}

func (b *bench) record(r result) {
	b.results = append(b.results, r)
	fmt.Fprintf(b.out, "%5d %3d %-10s %-12s %6d %5d %9.0f %9.1f %6.1f %s\n",
		r.procs, r.rep, r.target, r.op, r.ops, r.errs, r.opsPerS, r.cpuUS, r.otherPct, r.note)
}

// yardstick is the floor's operation a keel operation is compared with.
func yardstick(op string) string {
	switch op {
	case "leased-read":
		return "read"
	case "renew", "revoke":
		return "write"
	}
	return op
}

// summary prints, for each level and operation, the medians of each
// target and the ratios of each keel target to the floor.
func (b *bench) summary() {
	med := func(procs int, target, op string, f func(result) float64) (float64, bool) {
		var v []float64
		for _, r := range b.results {
			if r.procs == procs && r.target == target && r.op == op && r.ops > 0 {
				v = append(v, f(r))
			}
		}
		if len(v) == 0 {
			return 0, false
		}
		slices.Sort(v)
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
		}
		return v[len(v)/2], true
	}
	opsf := func(r result) float64 { return r.opsPerS }
	cpuf := func(r result) float64 { return r.cpuUS }
	var keels []string
	for _, t := range b.cfg.targets {
		if t != "floor" {
			keels = append(keels, t)
		}
	}
	var hdr, sep bytes.Buffer
	hdr.WriteString("| GOMAXPROCS | op | floor ops/s | floor CPU µs/op |")
	sep.WriteString("|---:|---|---:|---:|")
	for _, k := range keels {
		fmt.Fprintf(&hdr, " %s ops/s | %s CPU µs/op | %s/floor ops/s | %s/floor CPU/op |", k, k, k, k)
		sep.WriteString("---:|---:|---:|---:|")
	}
	fmt.Fprintf(b.out, "\n# medians of %d repetitions; lease ops are compared with the floor's %s\n", b.cfg.reps,
		"read (leased-read) and write (renew, revoke)")
	fmt.Fprintln(b.out, hdr.String())
	fmt.Fprintln(b.out, sep.String())
	for _, p := range b.cfg.procs {
		for _, op := range b.cfg.ops {
			fo, ok1 := med(p, "floor", yardstick(op), opsf)
			fc, _ := med(p, "floor", yardstick(op), cpuf)
			name := op
			if yardstick(op) != op {
				name += " (floor: " + yardstick(op) + ")"
			}
			line := fmt.Sprintf("| %d | %s | %s | %s |", p, name, num(fo, ok1, 0), num(fc, ok1, 1))
			for _, k := range keels {
				ko, ok2 := med(p, k, op, opsf)
				kc, _ := med(p, k, op, cpuf)
				line += fmt.Sprintf(" %s | %s | %s | %s |", num(ko, ok2, 0), num(kc, ok2, 1),
					num(ko/fo, ok1 && ok2 && fo > 0, 2), num(kc/fc, ok1 && ok2 && fc > 0, 2))
			}
			fmt.Fprintln(b.out, line)
		}
	}
}

func num(v float64, ok bool, prec int) string {
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// procCPU returns the user + system CPU time of process pid; 0 when unknown.
func procCPU(pid int) time.Duration {
	d, _ := procstat.CPU(pid)
	return d
}
