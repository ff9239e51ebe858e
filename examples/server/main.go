package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/leader"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
)

// The server's timeouts. ReadHeaderTimeout bounds how long a client may
// hold a connection before it has sent a request; ReadTimeout and
// WriteTimeout bound a whole request and its response; IdleTimeout closes
// kept-alive connections. shutdownTimeout is how long a stopping server
// waits for requests in flight.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 30 * time.Second
	// requestLogDelay is how late a request's log line may be written.
	requestLogDelay = 100 * time.Millisecond
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, stop catching: a second one ends the
	// program at once instead of waiting for the shutdown.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		os.Exit(2) // the flag package has printed the problem and the usage
	default:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run is the whole program but for the process: it serves until ctx ends,
// then shuts down gracefully and returns nil, or returns the first error.
// Logs, and the generated root token, go to stderr.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "audit":
			return auditCommand(args[1:], stderr)
		case "snapshot":
			return snapshotCommand(ctx, args[1:], stderr)
		case "migrate":
			return migrateCommand(ctx, args[1:], stderr)
		}
	}
	return serve(ctx, args, stderr, hooks{})
}

// hooks let a test observe and extend a server started by serve. The zero
// value does nothing.
type hooks struct {
	// ready is called with the address the server listens on, once it
	// accepts connections.
	ready func(addr string)
	// mount is called after the adapters are mounted, to add routes.
	mount func(mux *routes, d *deps)
	// shutdown is called when the server has begun to shut down: it
	// accepts no more connections, but requests in flight go on.
	shutdown func()
	// handler, when not nil, is called with the server's whole handler
	// (token check, request log, limits, audit, routes) before it
	// serves, so that a benchmark can call it without the network.
	handler func(http.Handler)
	// peeringHeartbeat, when not zero, replaces the heartbeat interval of
	// cluster peering (15 s), so that end-to-end tests see exports fast.
	peeringHeartbeat time.Duration
}

// envRootToken is the environment variable that gives the root token
// when -root-token does not: unlike a flag, it does not show in the
// process list.
const envRootToken = "KEEL_ROOT_TOKEN"

// options are the command-line flags.
type options struct {
	addr        string
	data        string
	etcd        string
	etcdPrefix  string        // -etcd-prefix
	leaderTTL   time.Duration // -leader-ttl
	rootToken   string
	sealKeyFile string
	configFile  string
	pprofAddr   string
	maxInflight int64 // -max-inflight-bytes; 0: no bound
	holdLeases  bool  // -hold-leases
	cluster     cluster
	tls         tlsOptions
}

// usageError is a command line the flag package refused; it has already
// told the user.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8200", "listen on `host:port`")
	fs.StringVar(&o.data, "data", "keel.db", "bbolt file of the store, or \"memory\" for a store that ends with the process")
	fs.StringVar(&o.etcd, "etcd", "", "run on etcd at these comma-separated `endpoints` instead of -data, with one server of the deployment running background work at a time")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", etcdstore.DefaultPrefix, "with -etcd, keep every key under this `prefix`: one per deployment sharing an etcd")
	fs.DurationVar(&o.leaderTTL, "leader-ttl", etcdstore.DefaultLeaderTTL, "with -etcd, the `duration` (whole seconds) after which another server takes over the background work of one that died")
	fs.StringVar(&o.rootToken, "root-token", "", "the root `token` (or the environment's "+envRootToken+"); when neither is given, the one generated at the first start over the same data, printed once and kept with the data")
	fs.StringVar(&o.sealKeyFile, "seal-key-file", "", "encrypt stored values with the keys of this `file` (see sealstore.ParseKeys)")
	fs.StringVar(&o.configFile, "config", "", "JSON `file` of policies and tokens")
	fs.BoolVar(&o.holdLeases, "hold-leases", false, "start with the lease manager held: no lease is revoked at its time until DELETE /v1/sys/leases/hold (after a snapshot restore)")
	fs.StringVar(&o.cluster.datacenter, "datacenter", "dc1", "the `name` of this cluster's datacenter, for cluster peering")
	fs.StringVar(&o.cluster.advertise, "advertise", "", "the `host:port` peer clusters reach this server at; when empty, -addr")
	fs.StringVar(&o.pprofAddr, "pprof", "", "serve net/http/pprof on this `host:port` (a listener of its own, no token); empty: none")
	fs.Int64Var(&o.maxInflight, "max-inflight-bytes", defaultMaxInflight, "at most this many `bytes` of request and response bodies in flight; a request beyond waits up to 10s, then answers 503 with Retry-After; 0: no bound")
	fs.StringVar(&o.tls.certFile, "tls-cert", "", "serve TLS with the PEM certificate (chain) of this `file`; needs -tls-key")
	fs.StringVar(&o.tls.keyFile, "tls-key", "", "the PEM private key of -tls-cert, in this `file`")
	fs.BoolVar(&o.tls.dev, "dev-tls", false, "serve TLS with a throwaway CA and certificate for localhost, 127.0.0.1 and ::1 made at start; prints the CA file's path")
	fs.StringVar(&o.tls.devDir, "dev-tls-dir", "", "write the -dev-tls CA and certificate into this `directory` (kept); empty: a temporary directory, removed at stop")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: server [flags]\n\nServes keel's HTTP adapters. Flags:\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	dataSet, rootTokenSet := false, false
	fs.Visit(func(f *flag.Flag) {
		dataSet = dataSet || f.Name == "data"
		rootTokenSet = rootTokenSet || f.Name == "root-token"
	})
	if rootTokenSet && o.rootToken == "" {
		err := errors.New("-root-token: must not be empty")
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	if !rootTokenSet {
		o.rootToken = os.Getenv(envRootToken)
	}
	if dataSet && o.etcd != "" {
		err := errors.New("-data and -etcd exclude each other")
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	var bad []string
	if o.leaderTTL < time.Second {
		bad = append(bad, "-leader-ttl: must be at least 1s")
	}
	if o.etcdPrefix == "" || !strings.HasSuffix(o.etcdPrefix, "/") {
		// "prod" would start "prod2/": its scans would see the keys of
		// another deployment.
		bad = append(bad, "-etcd-prefix: must end with \"/\"")
	}
	if len(bad) > 0 {
		err := errors.New(strings.Join(bad, "; "))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	if o.maxInflight < 0 {
		err := errors.New("-max-inflight-bytes: must not be negative")
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	if err := o.tls.check(); err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, usageError{err}
	}
	return o, nil
}

// serve is run with hooks.
func serve(ctx context.Context, args []string, stderr io.Writer, h hooks) (err error) {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	defer func() { // registered first, so it runs last: after the store is closed
		if err == nil {
			logger.Info("stopped")
		}
	}()

	// The root token: the one given (-root-token, KEEL_ROOT_TOKEN), else
	// the one kept with the data, else a new one, generated, kept with
	// the data once the server listens and printed once (see below).
	authz, tokens, err := loadAuth(opts.configFile, opts.rootToken)
	if err != nil {
		return err
	}
	tlsServer, err := loadTLS(opts.tls, devTLSHosts(opts.addr, opts.cluster.advertise), time.Now())
	if err != nil {
		return err
	}
	if tlsServer.cleanup != nil {
		defer func() { err = errors.Join(err, tlsServer.cleanup()) }()
	}

	var store storage.Store
	var leaders func(name string) leader.Leader // nil: this server alone runs background work
	where := opts.data
	if opts.etcd != "" {
		store, leaders, err = openEtcd(ctx, opts.etcd, opts.etcdPrefix, opts.leaderTTL, opts.sealKeyFile)
		where = "etcd " + opts.etcd
	} else {
		store, err = openStore(opts.data, opts.sealKeyFile)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	state, err := loadState(ctx, store)
	if err != nil {
		return err
	}
	generated := ""
	if opts.rootToken == "" {
		if sum, ok := state.rootDigest(); ok {
			if !tokens.addDigest(sum, rootPrincipal()) {
				return errors.New("the root token kept with the data is also a token of -config: remove it from the file")
			}
		} else {
			generated = newRootToken()
		}
	}

	d := &deps{
		store: store, authorizer: authz, clock: keel.SystemClock{}, logger: logger, cluster: opts.cluster,
		leaders: leaders, peeringHeartbeat: h.peeringHeartbeat, tls: opts.tls.enabled(), holdLeases: opts.holdLeases,
		state: state, storageType: storageType(opts),
	}
	if d.cluster.advertise == "" {
		d.cluster.advertise = opts.addr
	}
	defer func() { err = errors.Join(err, d.close()) }() // before the store closes
	mux := newRoutes()
	if err := telemetryOf(ctx, d); err != nil {
		return err
	}
	if err := mountAdapters(mux, d); err != nil {
		return err
	}
	if err := watchLeases(d); err != nil {
		return err
	}
	registerMetrics(mux, d)
	if h.mount != nil {
		h.mount(mux, d)
	}
	audits, err := openAudits(ctx, d)
	if err != nil {
		return err
	}
	audits.register(mux)
	// SIGHUP reopens the audit files, as after a rotation.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	hupDone := make(chan struct{})
	defer func() { signal.Stop(hup); close(hupDone) }()
	go func() {
		for {
			select {
			case <-hup:
				audits.reopen()
			case <-hupDone:
				return
			}
		}
	}()

	if opts.pprofAddr != "" {
		_, stopPprof, err := startPprof(ctx, opts.pprofAddr, logger)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopPprof()) }()
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", opts.addr)
	if err != nil {
		return err
	}
	if generated != "" {
		// Kept only now that the server listens: a start that fails
		// before it has printed the token must not keep a token nobody
		// has seen. Another server of the deployment may have kept its
		// own first: that one is the root token, and this one is not
		// printed.
		sum, mine, err := keepRootToken(ctx, store, generated)
		if err == nil && !tokens.addDigest(sum, rootPrincipal()) {
			err = errors.New("the root token kept with the data is also a token of -config: remove it from the file")
		}
		if err != nil {
			return errors.Join(err, ln.Close())
		}
		if !mine {
			generated = ""
		}
	}
	// Request lines go through a buffer written out in batches, at most
	// requestLogDelay late (log.go); the other lines as they come.
	requestLog := newLineBuffer(stderr, requestLogDelay)
	defer requestLog.Close() // after the shutdown, which waits for requests
	// Every request: its token, its report to the request log and the
	// telemetry (front.go), the caps on its path, the rate-limit quotas of
	// the Vault dialect (ratelimit.go), the bound on the bodies in flight
	// (limits.go), then its audit records (audit.go).
	var handler http.Handler = audits.middleware(mux)
	if opts.maxInflight > 0 {
		handler = limitBodies(newBudget(opts.maxInflight, inflightWait), newBudget(min(opts.maxInflight, anonInflight), inflightWait), handler)
	}
	srv := &http.Server{
		Handler:           front(tokens, d.requestObserver(requestLog), d.clock, checkPath(limitRate(d.rateLimits, handler))),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         tlsServer.config,
	}
	if h.shutdown != nil {
		srv.RegisterOnShutdown(h.shutdown)
	}
	if h.handler != nil {
		h.handler(srv.Handler)
	}
	served := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()

	if generated != "" {
		// Printed once, on a line of its own, and never logged: this is
		// the only time anyone sees it. The store keeps its digest, so
		// that it keeps working after a restart.
		fmt.Fprintf(stderr, "Root Token: %s\n", generated)
	}
	if tlsServer.caFile != "" {
		// Clients trust the throwaway CA through this file: Terraform
		// and go-tfe with SSL_CERT_FILE, curl with --cacert.
		fmt.Fprintf(stderr, "Dev TLS CA: %s\n", tlsServer.caFile)
	}
	logger.Info("listening", "addr", ln.Addr().String(), "tls", tlsServer.config != nil, "data", where, "sealed", opts.sealKeyFile != "")
	if h.ready != nil {
		h.ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	<-served // http.ErrServerClosed
	return nil
}
