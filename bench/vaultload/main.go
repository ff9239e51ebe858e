// Command vaultload is the load generator of bench/http.sh: it drives a
// server that speaks the Vault HTTP API (keel's example server, or a
// HashiCorp Vault dev server) through the official client,
// github.com/hashicorp/vault/api, and prints, for each phase, the rate,
// the latency and the CPU the server spent per operation.
//
// Suites (-suite, comma-separated):
//
//	kv     on the kv version 1 mount -kv-mount: write, read, list (a folder of
//	       -list-keys keys, filled once), delete
//	lease  on the leased kv mount -lease-mount: a read that issues a lease,
//	       sys/leases/lookup, sys/leases/renew, sys/leases/revoke of each
//	       lease; then one sys/leases/revoke-prefix (sync) of -prefix-leases
//	       leases
//	fill   issue -fill-leases leases and leave them (for restart tests)
//
// Each phase runs -ops operations (-list-ops for lists) spread over each
// count of workers of -workers, -reps times, and stops early at -max. The
// server's CPU time comes from /proc/<-server-pid>/stat (user + system, in
// clock ticks of 10 ms: give phases enough operations to make that fine);
// its RSS from /proc/<pid>/status. "other%" is the CPU used on the machine
// by neither the server nor this program, in percent of all cores: when it
// is not near zero, other work shared the machine.
//
// At the end it prints, for each phase and worker count, the median over
// the repetitions. -json appends every result as a JSON line.
//
// It only talks to loopback addresses.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	vault "github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/bench/internal/procstat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "vaultload:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	addr, token, header    string
	suites                 []string
	workers                []int
	ops, listOps, reps     int
	listKeys, prefixLeases int
	fillLeases             int
	kvMount, leaseMount    string
	maxPhase               time.Duration
	serverPID              int
	jsonPath               string
}

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	var suites, workers string
	fs := flag.NewFlagSet("vaultload", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "http://127.0.0.1:8200", "server `URL` (loopback only)")
	fs.StringVar(&c.token, "token", "ROOT", "the `token` sent with every request")
	fs.StringVar(&c.header, "token-header", "X-Secrets-Token", "the `header` that carries the token (Vault: X-Vault-Token)")
	fs.StringVar(&suites, "suite", "kv,lease", "comma-separated `suites`: kv, lease, fill")
	fs.StringVar(&workers, "workers", "32", "comma-separated `counts` of concurrent workers")
	fs.IntVar(&c.ops, "ops", 20000, "operations per phase")
	fs.IntVar(&c.listOps, "list-ops", 300, "operations per list phase")
	fs.IntVar(&c.reps, "reps", 3, "repetitions of every phase")
	fs.IntVar(&c.listKeys, "list-keys", 10000, "keys in the listed folder")
	fs.IntVar(&c.prefixLeases, "prefix-leases", 10000, "leases revoked by the one revoke-prefix call")
	fs.IntVar(&c.fillLeases, "fill-leases", 1000000, "leases issued by -suite fill")
	fs.StringVar(&c.kvMount, "kv-mount", "secret", "kv version 1 `mount`")
	fs.StringVar(&c.leaseMount, "lease-mount", "leased", "kv `mount` with leased_passthrough")
	fs.DurationVar(&c.maxPhase, "max", 30*time.Second, "wall-clock cap of a phase")
	fs.IntVar(&c.serverPID, "server-pid", 0, "`pid` of the server, for its CPU time and RSS; 0: not measured")
	fs.StringVar(&c.jsonPath, "json", "", "append results as JSON lines to this `file`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	u, err := url.Parse(c.addr)
	if err != nil {
		return c, fmt.Errorf("-addr: %w", err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		return c, fmt.Errorf("-addr %s: only loopback addresses", c.addr)
	}
	c.suites = strings.Split(suites, ",")
	for _, w := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-workers: bad count %q", w)
		}
		c.workers = append(c.workers, n)
	}
	if c.ops < 1 || c.listOps < 1 || c.reps < 1 || c.listKeys < 1 || c.prefixLeases < 1 || c.fillLeases < 1 {
		return c, errors.New("-ops, -list-ops, -reps, -list-keys, -prefix-leases and -fill-leases must be positive")
	}
	return c, nil
}

// loader runs the phases and keeps their results.
type loader struct {
	cfg     config
	lg      *vault.Logical
	out     io.Writer
	json    io.Writer // nil: no JSON lines
	results []result
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	vc := vault.DefaultConfig()
	vc.Address = cfg.addr
	vc.MaxRetries = 0 // an error counts, it is not retried away
	vc.Timeout = 2 * time.Minute
	tr, ok := vc.HttpClient.Transport.(*http.Transport)
	if !ok {
		return errors.New("the vault client's transport is not an *http.Transport")
	}
	// The default keeps GOMAXPROCS+1 idle connections per host: with 32
	// workers, connections would be opened and closed all the time.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	client, err := vault.NewClient(vc)
	if err != nil {
		return fmt.Errorf("vault client: %w", err)
	}
	client.ClearToken()
	client.AddHeader(cfg.header, cfg.token)
	l := &loader{cfg: cfg, lg: client.Logical(), out: out}
	if cfg.jsonPath != "" {
		f, err := os.OpenFile(cfg.jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		l.json = f
	}
	fmt.Fprintf(out, "# vaultload addr=%s suites=%s workers=%v ops=%d list-ops=%d reps=%d GOMAXPROCS=%d\n",
		cfg.addr, strings.Join(cfg.suites, ","), cfg.workers, cfg.ops, cfg.listOps, cfg.reps, runtime.GOMAXPROCS(0))
	fmt.Fprintln(out, header)
	for _, s := range cfg.suites {
		switch strings.TrimSpace(s) {
		case "kv":
			err = l.suiteKV(ctx)
		case "lease":
			err = l.suiteLease(ctx)
		case "fill":
			err = l.suiteFill(ctx)
		default:
			err = fmt.Errorf("unknown suite %q", s)
		}
		if err != nil {
			return err
		}
	}
	l.summary()
	return nil
}

// secretData is what every write stores: three strings, about 100 bytes
// of JSON, as the reference figures of Vault were measured with.
func secretData() map[string]any {
	return map[string]any{
		"username": "svc-app-01",
		"password": "p4ssw0rd-0123456789abcdef",
		"url":      "https://db.internal.example:5432/app",
	}
}

// ---------------------------------------------------------------- kv

func (l *loader) suiteKV(ctx context.Context) error {
	folder := l.cfg.kvMount + "/list10k"
	s, err := l.lg.ListWithContext(ctx, folder)
	if err != nil || s == nil || keyCount(s) < l.cfg.listKeys {
		r := l.phase(ctx, "setup", "fill-list", 32, 0, l.cfg.listKeys, func(ctx context.Context, i int) error {
			_, err := l.lg.WriteWithContext(ctx, fmt.Sprintf("%s/key-%05d", folder, i), secretData())
			return err
		})
		if r.Errors > 0 {
			return fmt.Errorf("filling %s: %d errors, the first: %s", folder, r.Errors, r.Note)
		}
	}
	for rep := 1; rep <= l.cfg.reps; rep++ {
		for _, w := range l.cfg.workers {
			p := func(i int) string { return fmt.Sprintf("%s/load/r%d-w%d/k%06d", l.cfg.kvMount, rep, w, i) }
			wr := l.phase(ctx, "kv", "write", w, rep, l.cfg.ops, func(ctx context.Context, i int) error {
				_, err := l.lg.WriteWithContext(ctx, p(i), secretData())
				return err
			})
			n := max(wr.Ops, 1)
			l.phase(ctx, "kv", "read", w, rep, l.cfg.ops, func(ctx context.Context, i int) error {
				s, err := l.lg.ReadWithContext(ctx, p(i%n))
				if err == nil && (s == nil || len(s.Data) != 3) {
					err = fmt.Errorf("read %s: %v", p(i%n), s)
				}
				return err
			})
			l.phase(ctx, "kv", "list10k", w, rep, l.cfg.listOps, func(ctx context.Context, _ int) error {
				s, err := l.lg.ListWithContext(ctx, folder)
				if err == nil && keyCount(s) != l.cfg.listKeys {
					err = fmt.Errorf("list %s: %d keys, want %d", folder, keyCount(s), l.cfg.listKeys)
				}
				return err
			})
			l.phase(ctx, "kv", "delete", w, rep, wr.Ops, func(ctx context.Context, i int) error {
				_, err := l.lg.DeleteWithContext(ctx, p(i))
				return err
			})
		}
	}
	return ctx.Err()
}

func keyCount(s *vault.Secret) int {
	if s == nil {
		return 0
	}
	keys, _ := s.Data["keys"].([]any)
	return len(keys)
}

// ---------------------------------------------------------------- leases

func (l *loader) leasedPath() string { return l.cfg.leaseMount + "/lease/s" }

// prepareLease writes the secret whose reads issue leases, and checks that
// they do.
func (l *loader) prepareLease(ctx context.Context) error {
	d := secretData()
	d["ttl"] = "1h"
	if _, err := l.lg.WriteWithContext(ctx, l.leasedPath(), d); err != nil {
		return fmt.Errorf("write %s: %w", l.leasedPath(), err)
	}
	s, err := l.lg.ReadWithContext(ctx, l.leasedPath())
	if err != nil {
		return fmt.Errorf("read %s: %w", l.leasedPath(), err)
	}
	if s == nil || s.LeaseID == "" {
		return fmt.Errorf("reads of %s issue no lease: is %s mounted with leased_passthrough?", l.leasedPath(), l.cfg.leaseMount)
	}
	return l.revoke(ctx, s.LeaseID)
}

func (l *loader) revoke(ctx context.Context, id string) error {
	_, err := l.lg.WriteWithContext(ctx, "sys/leases/revoke", map[string]any{"lease_id": id})
	return err
}

func (l *loader) issue(ctx context.Context) (string, error) {
	s, err := l.lg.ReadWithContext(ctx, l.leasedPath())
	if err != nil {
		return "", err
	}
	if s == nil || s.LeaseID == "" {
		return "", errors.New("the read issued no lease")
	}
	return s.LeaseID, nil
}

func (l *loader) suiteLease(ctx context.Context) error {
	if err := l.prepareLease(ctx); err != nil {
		return err
	}
	for rep := 1; rep <= l.cfg.reps; rep++ {
		for _, w := range l.cfg.workers {
			ids := make([]string, l.cfg.ops)
			cr := l.phase(ctx, "lease", "create(read)", w, rep, l.cfg.ops, func(ctx context.Context, i int) error {
				id, err := l.issue(ctx)
				ids[i] = id
				return err
			})
			n := cr.Ops
			l.phase(ctx, "lease", "lookup", w, rep, n, func(ctx context.Context, i int) error {
				s, err := l.lg.WriteWithContext(ctx, "sys/leases/lookup", map[string]any{"lease_id": ids[i]})
				if err == nil && (s == nil || s.Data["id"] != ids[i]) {
					err = fmt.Errorf("lookup of %s: %v", ids[i], s)
				}
				return err
			})
			l.phase(ctx, "lease", "renew", w, rep, n, func(ctx context.Context, i int) error {
				_, err := l.lg.WriteWithContext(ctx, "sys/leases/renew", map[string]any{"lease_id": ids[i], "increment": 3600})
				return err
			})
			l.phase(ctx, "lease", "revoke", w, rep, n, func(ctx context.Context, i int) error {
				return l.revoke(ctx, ids[i])
			})
		}
		setup := l.phase(ctx, "setup", "create(read)", 32, rep, l.cfg.prefixLeases, func(ctx context.Context, _ int) error {
			_, err := l.issue(ctx)
			return err
		})
		prefix := l.cfg.leaseMount + "/lease"
		l.once(ctx, "lease", "revoke-prefix", rep, setup.Ops, func(ctx context.Context) error {
			_, err := l.lg.WriteWithContext(ctx, "sys/leases/revoke-prefix/"+prefix, map[string]any{"sync": true})
			return err
		})
		if s, err := l.lg.ListWithContext(ctx, "sys/leases/lookup/"+l.leasedPath()+"/"); err == nil && keyCount(s) > 0 {
			return fmt.Errorf("%d leases left under %s after revoke-prefix", keyCount(s), prefix)
		}
	}
	return ctx.Err()
}

func (l *loader) suiteFill(ctx context.Context) error {
	if err := l.prepareLease(ctx); err != nil {
		return err
	}
	l.cfg.maxPhase = 24 * time.Hour // bounded by -fill-leases alone
	r := l.phase(ctx, "fill", "create(read)", 32, 0, l.cfg.fillLeases, func(ctx context.Context, _ int) error {
		_, err := l.issue(ctx)
		return err
	})
	if r.Errors > 0 {
		return fmt.Errorf("fill: %d errors, the first: %s", r.Errors, r.Note)
	}
	return ctx.Err()
}

// ---------------------------------------------------------------- measuring

// result is one phase of one repetition.
type result struct {
	Suite    string  `json:"suite"`
	Op       string  `json:"op"`
	Workers  int     `json:"workers"`
	Rep      int     `json:"rep"`
	Ops      int     `json:"ops"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	OpsPerS  float64 `json:"ops_per_s"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	SrvCPUus float64 `json:"server_cpu_us_per_op"` // -1: not measured
	CliCPUus float64 `json:"client_cpu_us_per_op"`
	SrvRSSMB float64 `json:"server_rss_mb"`
	OtherPct float64 `json:"other_cpu_pct"`
	Note     string  `json:"note,omitempty"`
}

const header = "suite   op             wrk rep    ops  errs     ops/s   p50(us)   p99(us)  srvCPUus  cliCPUus  rssMB other%"

// sample is what the phase's figures are differences of.
type sample struct {
	at        time.Time
	srv, self time.Duration // CPU time; srv < 0: unknown
	busy      time.Duration // CPU time of the whole machine
	rssMB     float64
}

func (l *loader) sample() sample {
	s := sample{at: time.Now(), srv: -1}
	if l.cfg.serverPID > 0 {
		s.srv, _ = procstat.CPU(l.cfg.serverPID)
		s.rssMB = procstat.RSS(l.cfg.serverPID)
	}
	s.self = procstat.Self()
	s.busy = procstat.MachineBusy()
	return s
}

// phase runs fn(ctx, i) for i in [0, n) over w workers, and records it.
func (l *loader) phase(ctx context.Context, suite, op string, w, rep, n int, fn func(context.Context, int) error) result {
	pctx, cancel := context.WithTimeout(ctx, l.cfg.maxPhase)
	defer cancel()
	var next, errs atomic.Int64
	var firstErr atomic.Pointer[string]
	lats := make([][]time.Duration, w)
	start := l.sample()
	var wg sync.WaitGroup
	for k := range w {
		wg.Go(func() {
			own := make([]time.Duration, 0, n/w+1)
			for pctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					break
				}
				t := time.Now()
				err := fn(pctx, i)
				own = append(own, time.Since(t))
				if err != nil && errs.Add(1) == 1 {
					msg := err.Error()
					firstErr.Store(&msg)
				}
			}
			lats[k] = own
		})
	}
	wg.Wait()
	end := l.sample()
	all := slices.Concat(lats...)
	slices.Sort(all)
	r := l.figures(suite, op, w, rep, len(all), start, end)
	r.Errors = errs.Load()
	if len(all) > 0 {
		r.P50us = micros(all[(len(all)-1)/2])
		r.P99us = micros(all[(len(all)*99-1)/100])
	}
	if len(all) < n {
		r.Note = fmt.Sprintf("stopped at %d of %d ops;", len(all), n)
	}
	if msg := firstErr.Load(); msg != nil {
		r.Note = strings.TrimSpace(r.Note + " first error: " + *msg)
	}
	l.record(r)
	return r
}

// once times one call that does units of work (one revoke-prefix of many
// leases): ops/s is units per second, and the CPU is that of the call.
func (l *loader) once(ctx context.Context, suite, op string, rep, units int, fn func(context.Context) error) result {
	start := l.sample()
	err := fn(ctx)
	end := l.sample()
	r := l.figures(suite, op, 1, rep, 1, start, end)
	r.OpsPerS = float64(units) / r.Seconds
	r.P50us, r.P99us = r.Seconds*1e6, r.Seconds*1e6
	r.Note = fmt.Sprintf("one call for %d leases; ops/s = leases/s", units)
	if err != nil {
		r.Errors = 1
		r.Note += "; error: " + err.Error()
	}
	l.record(r)
	return r
}

func (l *loader) figures(suite, op string, w, rep, ops int, start, end sample) result {
	wall := end.at.Sub(start.at)
	r := result{Suite: suite, Op: op, Workers: w, Rep: rep, Ops: ops, Seconds: wall.Seconds(), SrvCPUus: -1, SrvRSSMB: end.rssMB}
	if ops == 0 {
		return r
	}
	r.OpsPerS = float64(ops) / wall.Seconds()
	self := end.self - start.self
	r.CliCPUus = micros(self) / float64(ops)
	other := end.busy - start.busy - self
	if start.srv >= 0 && end.srv >= 0 {
		srv := end.srv - start.srv
		r.SrvCPUus = micros(srv) / float64(ops)
		other -= srv
	}
	r.OtherPct = max(0, 100*other.Seconds()/(wall.Seconds()*float64(runtime.NumCPU())))
	return r
}

func (l *loader) record(r result) {
	l.results = append(l.results, r)
	fmt.Fprintf(l.out, "%-7s %-13s %4d %3d %6d %5d %9.0f %9.0f %9.0f %9.0f %9.0f %6.0f %6.1f %s\n",
		r.Suite, r.Op, r.Workers, r.Rep, r.Ops, r.Errors, r.OpsPerS, r.P50us, r.P99us, r.SrvCPUus, r.CliCPUus, r.SrvRSSMB, r.OtherPct, r.Note)
	if l.json != nil {
		b, err := json.Marshal(r)
		if err == nil {
			_, err = l.json.Write(append(b, '\n'))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "vaultload: -json:", err)
		}
	}
}

// summary prints the median over the repetitions of each measured phase.
func (l *loader) summary() {
	type key struct {
		suite, op string
		workers   int
	}
	var order []key
	groups := map[key][]result{}
	for _, r := range l.results {
		if r.Suite == "setup" {
			continue
		}
		k := key{r.Suite, r.Op, r.Workers}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(l.out, "\n# medians of %d repetitions\n", l.cfg.reps)
	fmt.Fprintln(l.out, "| suite | op | workers | ops/s | p50 µs | p99 µs | server CPU µs/op | other% | errors |")
	fmt.Fprintln(l.out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range order {
		rs := groups[k]
		med := func(f func(result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		var errs int64
		for _, r := range rs {
			errs += r.Errors
		}
		fmt.Fprintf(l.out, "| %s | %s | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %d |\n", k.suite, k.op, k.workers,
			med(func(r result) float64 { return r.OpsPerS }), med(func(r result) float64 { return r.P50us }),
			med(func(r result) float64 { return r.P99us }), med(func(r result) float64 { return r.SrvCPUus }),
			med(func(r result) float64 { return r.OtherPct }), errs)
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
