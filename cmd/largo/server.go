package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"largo"
	"largo/archive"
	"largo/dav"
	"largo/disk"
	"largo/expiry"
	"largo/gate"
	"largo/hooks"
	"largo/ingest"
	"largo/internal/gather"
	"largo/internal/heapprofile"
	"largo/internal/quick"
	"largo/internal/startpages"
	"largo/limit"
	"largo/metrics"
	"largo/pageapi"
	"largo/quota"
	"largo/resumable"
	"largo/s3api"
	"largo/serve"
	"largo/sidecar"
)

// server is what largo serve runs: the store, the gate every front end
// reads and writes through, the write pipeline, the front ends (the file
// protocol, resumable uploads, WebDAV), the listeners and the background
// workers. newServer makes it from the flags, in one go; Run serves until
// a stop, and Shutdown stops it.
//
// One errgroup owns every goroutine the server starts (the workers and
// the listeners' loops), and every stop waits for all of them before the
// server's last work: the quota's last sync and the release of the hooks'
// outbox come after the last write, whatever stopped the server.
type server struct {
	e     *env
	log   *slog.Logger
	where string // the store, as the user is told of it
	https bool
	// url is where clients reach the server, recorded for largo share.
	url string
	// drain is how long transfers in flight may finish at a stop, and
	// shutdown how long the server's own last work may take after them.
	drain, shutdown time.Duration

	store    closingStore
	watcher  *disk.Watcher // the open-file cache's, nil for none
	handed   *handedOver
	ln       net.Listener // the main listener, as taken
	lim      *limit.Listener
	http     *http.Server
	handler  *serve.Handler
	requests *requests
	adminLn  net.Listener // nil without an admin listener
	admin    *http.Server
	// The S3 API's listener and server (--s3-listen), nil without.
	s3ln   net.Listener
	s3lim  *limit.Listener
	s3http *http.Server
	s3     *s3api.Handler

	quota   *quota.Keeper // nil without quotas
	hooks   *hooks.Hooks  // nil without hooks
	workers []worker

	// group runs the workers and the listeners' loops once started; its
	// context (failed) is done when a listener fails.
	group  *errgroup.Group
	failed context.Context
	// stopWorkers ends the workers' context.
	stopWorkers context.CancelFunc
}

// worker is background work of the server: run returns once its context
// is done.
type worker struct {
	what string
	run  func(context.Context)
}

// spawn adds a worker, started by Run.
func (s *server) spawn(what string, run func(context.Context)) {
	s.workers = append(s.workers, worker{what, run})
}

// sweepEvery adds a worker that runs clean now and then every period
// (see every).
func (s *server) sweepEvery(period time.Duration, what string, clean func(context.Context) (int, error)) {
	s.spawn("sweep of "+what, func(ctx context.Context) { every(ctx, s.log, period, what, clean) })
}

// newServer makes the server the flags describe: it takes the listeners,
// opens the store, and makes the gate, the write pipeline, the front ends
// and the workers, none of which runs before Run. What it opened is closed
// again when it fails.
func newServer(ctx context.Context, e *env, cfg *serveConfig, logger *slog.Logger, logOut io.Writer) (_ *server, err error) {
	s := &server{e: e, log: logger, drain: cfg.drainTimeout, shutdown: cfg.shutdownTimeout}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if cfg.shutdownTimeout <= 0 {
		return nil, usageErr(errors.New("--shutdown-timeout: give a positive duration"))
	}
	tlsConf, err := loadTLS(cfg)
	if err != nil {
		return nil, err
	}
	s.https = tlsConf != nil
	if s.handed, err = takeHandedOver(e); err != nil {
		return nil, err
	}
	// pprof's heap profile is served on the admin listener alone, and
	// only there is it worth the runtime's sampling (see package
	// heapprofile): it covers the allocations from here on.
	if cfg.adminListen != "" || s.handed.admin != nil {
		heapprofile.On()
	}
	// The address is taken first, so that a server that cannot have it
	// says so in one line, before it logs anything of what it would do.
	if s.ln, err = s.handed.listen(cfg.listen); err != nil {
		return nil, usageErr(fmt.Errorf("cannot listen on %s: %v", cfg.listen, netErrText(err)))
	}
	if s.url, err = publicURL(cfg, s.ln.Addr(), s.https); err != nil {
		return nil, err
	}
	proxies, trusted, err := newProxies(logger, &cfg.access)
	if err != nil {
		return nil, err
	}
	if s.store, s.where, err = openServed(ctx, e, cfg, logger); err != nil {
		return nil, err
	}
	if s.adminLn, err = s.handed.listenAdmin(cfg.adminListen); err != nil {
		return nil, usageErr(fmt.Errorf("cannot listen on %s: %v", cfg.adminListen, netErrText(err)))
	}
	if cfg.s3api.listen != "" {
		if s.s3ln, err = net.Listen("tcp", cfg.s3api.listen); err != nil {
			return nil, usageErr(fmt.Errorf("--s3-listen: cannot listen on %s: %v", cfg.s3api.listen, netErrText(err)))
		}
	}
	m := newMetrics()
	if s.handler, err = s.newHandler(ctx, cfg, m, logOut, trusted); err != nil {
		return nil, err
	}
	var front http.Handler = s.handler
	if proxies != nil {
		front = proxies.Handler(front)
	}
	s.requests = &requests{}
	s.lim = limitConns(s.ln, cfg, trusted, logger, tlsConf == nil)
	s.http = httpServer(s.requests.count(front), cfg, logger, tlsConf)
	if s.s3 != nil {
		var s3front http.Handler = s.handler.Front(s.s3)
		if proxies != nil {
			s3front = proxies.Handler(s3front)
		}
		s.s3lim = limitConns(s.s3ln, cfg, trusted, logger, tlsConf == nil)
		s.s3http = httpServer(s.requests.count(s.s3Handler(cfg, s3front)), cfg, logger, tlsConf)
	}
	if s.adminLn != nil {
		// The admin listener answers only its own names too: on a
		// loopback address, loopback names, so that a page on a
		// rebinding domain cannot read pprof.
		hosts := hostNames(s.adminLn.Addr().String(), cfg.access.hosts)
		s.admin = &http.Server{Handler: serve.OnlyHosts(hosts, adminMux(m.Handler())), ReadHeaderTimeout: readHeaderTimeout}
	}
	return s, nil
}

// newHandler makes the handler of the file tree and all it stands on:
// the gate, the write pipeline (which, with writes off, only removes
// expired files), the front ends, and the workers that keep them.
func (s *server) newHandler(ctx context.Context, cfg *serveConfig, m *metrics.Metrics, logOut io.Writer, trusted []netip.Prefix) (*serve.Handler, error) {
	st, logger := s.store, s.log
	enc, err := encoders(cfg)
	if err != nil {
		return nil, err
	}
	lcfg, err := listingConfig(cfg)
	if err != nil {
		return nil, usageErr(err)
	}
	g, writesOn, err := newGate(ctx, s.e, logger, cfg, st)
	if err != nil {
		return nil, err
	}
	if cfg.access.accessFile != "" {
		s.spawn("reload of the access file", func(ctx context.Context) { reloadAccess(ctx, s.e, logger, &cfg.access, g.Access()) })
	}
	if ls := g.Links(); ls != nil {
		s.sweepEvery(linkSweepPeriod, "expired share links", ls.Sweep)
	}
	// Every front end reads and writes through the gate; the raw store is
	// kept for the server's own housekeeping (sweeps, records).
	gated := g.Store(st)
	var state largo.State
	if sk, ok := st.(largo.StateKeeper); ok {
		// The handler reads sidecar and digest records from the state
		// area whether or not links are on: the store given to it is the
		// gate's, which keeps the area to itself.
		state = sk.State()
	}
	files := recordsOf(st)
	if files != nil {
		s.spawn("migration of the records of files", func(ctx context.Context) { migrateRecords(ctx, logger, files) })
	}
	digests := newDigests(logger, st, files)
	if rate := int64(cfg.digestRate.sizeValue); digests != nil && rate > 0 {
		s.spawn("digest hashing", func(ctx context.Context) { digests.Scan(ctx, digestScanPeriod, rate, logger) })
	}
	var locks *dav.Locks
	if cfg.webdav {
		if state == nil {
			return nil, usageErr(errors.New("--webdav: this store keeps no state for locks"))
		}
		if locks, err = dav.NewLocks(state, nil); err != nil {
			return nil, usageErr(fmt.Errorf("--webdav: %v", err))
		}
		locks.Physical(physicalOf(g))
	}
	exp := newExpiry(logger, st, g, m)
	sidecars := sidecarPolicy(files, cfg.sidecars.value == "any")
	// One sender of archives for the file tree and the page, so that
	// their tar.zst archives take the same compression slots.
	// A zip of files whose CRC-32s are all recorded resumes.
	var crc32 archive.CRC32Func
	if digests != nil {
		crc32 = digests.CRC32
	}
	archives := serve.NewArchives(lcfg.Dir, crc32, enc)
	hcfg := serve.Config{
		Store:       gated,
		Gate:        g,
		State:       state,
		Files:       files,
		Access:      g.Access(),
		Hosts:       hostNames(s.ln.Addr().String(), cfg.access.hosts),
		CORSOrigins: cfg.access.corsOrigins,
		Listing:     lcfg,
		Compress:    enc,
		Archives:    archives,
		Sidecars:    sidecars,
		Digests:     digests,
		Expiry:      exp,
		Compression: m,
		Logger:      logger,
		AccessLog:   textAccessLog(logOut, cfg.logFormat.value),
		Observer:    m,
		Metrics:     m.Handler(),
		IdleTimeout: cfg.idleTimeout,
		MinRate:     int64(cfg.minRate),
		Rates:       cfg.rates.limits(m),
	}
	if s.adminLn != nil {
		hcfg.Metrics = nil // on the admin listener instead
	}
	// Removing, expiring, moving or replacing a file takes its sidecars
	// along, whatever protocol does it.
	icfg := ingest.Config{Store: gated, Derived: sidecar.NewFollower(sidecars, st, logger), Files: files, Server: asServer, Logger: logger}
	if locks != nil {
		icfg.Guard = locks
	}
	cache, watcher := newFileCache(&cfg.fileCache, st, cfg.bucket())
	s.watcher = watcher
	if cache != nil {
		// Downloads read through it; every change the pipeline makes is
		// told to it before it is answered.
		hcfg.Cache, icfg.Changes = cache, cache
	}
	if !writesOn {
		if cfg.hooks.on() {
			logger.Warn("hooks are off: this server takes no writes (give --upload, or an access file that grants writes)")
		}
		// Nothing is written, but expired files are still removed.
		s.sweepExpired(cfg, exp, ingest.New(icfg))
	} else if err := s.newWrites(ctx, cfg, g, m, icfg, exp, locks, trusted, state, &hcfg); err != nil {
		return nil, err
	}
	if locks != nil {
		hcfg.DAV = dav.New(dav.Config{Store: gated, Writes: hcfg.Writes, Locks: locks, Logger: logger})
	}
	hcfg.Page = pageapi.New(pageapi.Config{
		Gate:        g,
		Store:       gated,
		Writes:      hcfg.Writes,
		Listing:     lcfg,
		Sidecars:    sidecars,
		Archives:    archives,
		CORSOrigins: cfg.access.corsOrigins,
		Logger:      logger,
	})
	if s.s3ln != nil {
		if err := s.newS3API(cfg, gated, hcfg.Writes, files, digests, lcfg); err != nil {
			return nil, err
		}
	}
	return serve.New(hcfg), nil
}

// newWrites readies the store for writes and makes what takes them: the
// write pipeline with its quotas and hooks, and the resumable uploads
// (tus and the IETF protocol), which it puts in hcfg, with the workers
// that sweep what writes leave. icfg is the pipeline's configuration
// without the writes' own.
func (s *server) newWrites(ctx context.Context, cfg *serveConfig, g *gate.Gate, m *metrics.Metrics, icfg ingest.Config, exp *expiry.Expiry, locks *dav.Locks, trusted []netip.Prefix, state largo.State, hcfg *serve.Config) error {
	st, logger := s.store, s.log
	if err := prepare(ctx, logger, st, s.where); err != nil {
		return err
	}
	// A bucket whose server lacks conditional writes takes one instance.
	lease, err := holdAlone(ctx, st, s.where)
	if err != nil {
		return err
	}
	if lease != nil {
		s.spawn("lease of the only instance", func(ctx context.Context) { keepAlone(ctx, logger, lease) })
	}
	staging, err := resumable.StagingFor(st)
	if err != nil {
		return cannotWrite(s.where, err)
	}
	if sw, ok := st.(sweeper); ok {
		// Every quarter of the upload expiry, between a second and a
		// quarter of an hour.
		s.sweepEvery(min(max(cfg.uploadExpiry/4, time.Second), 15*time.Minute), "what interrupted writes left", func(ctx context.Context) (int, error) {
			return sw.Sweep(ctx, time.Now().Add(-cfg.uploadExpiry))
		})
	}
	if locks != nil {
		s.sweepEvery(lockSweepPeriod, "expired WebDAV locks", locks.Sweep)
	}
	icfg.MaxSize = int64(cfg.maxUpload)
	icfg.Reserve = int64(cfg.reserve)
	icfg.NoMkdir = cfg.noMkdir
	icfg.Observer = m
	icfg.Landed = exp
	if s.quota, err = newQuota(ctx, logger, cfg, st, icfg.Files, g, m); err != nil {
		return err
	}
	if k := s.quota; k != nil {
		icfg.Quota = ingest.PhysicalQuota(k, entryOf(g))
		s.spawn("quota", func(ctx context.Context) { k.Run(ctx, cfg.quota.sync, cfg.quota.reconcile) })
	}
	if s.hooks, err = newHooks(logger, &cfg.hooks, st, m); err != nil {
		return err
	}
	if s.hooks != nil {
		icfg.Hooks = s.hooks
		s.spawn("hooks' sender", s.hooks.Run)
	}
	writes := ingest.New(icfg)
	s.sweepExpired(cfg, exp, writes)
	rcfg := resumable.Config{
		Writes:      writes,
		Staging:     staging,
		State:       state,
		BasePath:    serve.ResumablePrefix,
		CORSOrigins: cfg.access.corsOrigins,
		Expiry:      cfg.uploadExpiry,
		IdleTimeout: cfg.idleTimeout,
		Logger:      logger,
		Observer:    m,
		// Only trusted proxies' forwarded fields reach the handler.
		Forwarded: len(trusted) > 0,
	}
	rh, err := resumable.New(rcfg)
	if err != nil {
		return failed(fmt.Errorf("resumable uploads: %v", pathErrText(err)))
	}
	if cfg.ietfVersions != "off" {
		vs, err := parseInts(cfg.ietfVersions)
		if err != nil {
			return usageErr(fmt.Errorf("--ietf-versions: %v", err))
		}
		ietf, err := rh.IETF(resumable.IETFConfig{BasePath: serve.ResumerPrefix, Versions: vs})
		if err != nil {
			return usageErr(err)
		}
		hcfg.Resumer = ietf
	}
	s.spawn("resumable uploads", rh.Run)
	hcfg.Writes = writes
	hcfg.Resumable = rh
	hcfg.Uploads = m
	return nil
}

// sweepExpired adds the worker that removes expired files through writes
// every --expiry-sweep.
func (s *server) sweepExpired(cfg *serveConfig, exp *expiry.Expiry, writes *ingest.Pipeline) {
	s.sweepEvery(cfg.expirySweep, "expired files", func(ctx context.Context) (int, error) {
		return exp.Sweep(ctx, writes)
	})
}

// physicalOf returns the physical name the store acts on for a name as
// spelled, for the locks and the quotas (gate.Gate.Where): a name whose
// links may not be followed is left as it is, and its store call fails.
func physicalOf(g *gate.Gate) func(ctx context.Context, name string, entry bool) string {
	return func(ctx context.Context, name string, entry bool) string {
		if n, err := g.Where(ctx, name, entry); err == nil {
			return n
		}
		return name
	}
}

// entryOf is physicalOf for the operations on an entry (a write, a
// removal): its folder's links followed, not one at its end.
func entryOf(g *gate.Gate) ingest.Where {
	where := physicalOf(g)
	return func(ctx context.Context, name string) string { return where(ctx, name, true) }
}

// errSecondSignal is a stop whose transfers a second signal cut.
var errSecondSignal = errors.New("second signal: transfers in flight cut at once")

// Run gives back the pages only start-up used, starts the workers and
// the listeners, says where the server serves, and serves until ctx is
// done, a signal comes or a listener fails; then it stops the server
// (Shutdown), a second signal cutting the transfers in flight at once,
// and closes what it holds. It returns once every goroutine the server
// started has ended, with what failed.
func (s *server) Run(ctx context.Context) error {
	defer s.close()
	s.releaseStartPages()
	s.start()
	adminURL := ""
	if s.adminLn != nil {
		adminURL = fmt.Sprintf("http://%s/", s.adminLn.Addr())
		fmt.Fprintf(s.e.stdout, "largo: metrics and pprof at %s\n", adminURL)
	}
	s3URL := ""
	if s.s3ln != nil {
		s3URL = listenURL(s.s3ln.Addr(), s.https)
		fmt.Fprintf(s.e.stdout, "largo: S3 API at %s, bucket %s\n", s3URL, s.s3.Bucket())
	}
	s.recordAddress(ctx)
	announce(s.e, s.where, s.ln.Addr(), s.https, adminURL, s3URL)
	select {
	case <-s.failed.Done():
	case <-ctx.Done():
	case <-s.e.signals:
	}
	stop, cut := context.WithCancelCause(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-s.e.signals:
			cut(errSecondSignal)
		case <-stop.Done():
		}
	}()
	err := s.Shutdown(stop)
	cut(nil)
	<-watched
	if errors.Is(context.Cause(stop), errSecondSignal) {
		err = errors.Join(errSecondSignal, err)
	}
	if err != nil {
		return failed(err)
	}
	return nil
}

// recordAddress records where the server is reached in its store's
// state area, for largo share (address.go); a store without one records
// nothing, and a failure is only logged: share then says it knows no
// address.
func (s *server) recordAddress(ctx context.Context) {
	sk, ok := s.store.(largo.StateKeeper)
	if !ok {
		return
	}
	if err := recordAddress(ctx, sk.State(), s.url); err != nil {
		s.log.Info("this server's address is not recorded: largo share needs --url", "err", err)
	}
}

// releaseStartPages gives back the executable's pages that only start-up
// used (package startpages): most of what an idle server would hold. It
// runs before the listeners serve, so that every request finds the same
// pages mapped, whenever it comes. A failure costs only that memory.
func (s *server) releaseStartPages() {
	n, err := startpages.Release()
	if err != nil {
		s.log.Debug("start-up's pages of the executable are kept", "err", err)
		return
	}
	s.log.Debug("start-up's pages of the executable released", "bytes", n)
}

// start runs the workers and the listeners' loops in the server's group.
func (s *server) start() {
	s.group, s.failed = errgroup.WithContext(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	s.stopWorkers = stop
	for _, w := range s.workers {
		s.group.Go(func() error {
			w.run(ctx)
			return nil
		})
	}
	var ln net.Listener = s.lim
	if !s.https {
		// Plain HTTP/1.1: the files kept in memory are answered in
		// the connection's lane, before net/http reads them.
		ln = quick.NewListener(ln, quick.Config{Server: s.http, Takes: s.handler.Quick})
	}
	s.group.Go(func() error { return s.serve(s.http, gather.Listener{Listener: ln}) })
	if s.s3http != nil {
		s.group.Go(func() error { return s.serve(s.s3http, s.s3lim) })
	}
	if s.admin != nil {
		s.group.Go(func() error {
			if err := s.admin.Serve(s.adminLn); !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("the admin listener failed: no metrics or pprof from now on", "err", err)
			}
			return nil
		})
	}
}

// serve serves srv on ln until it is shut down; any other end is an
// error, which ends the group's context: the server stops.
func (s *server) serve(srv *http.Server, ln net.Listener) error {
	var err error
	if s.https {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server Run started. It stops accepting connections
// and reports not ready; lets the transfers in flight finish for the
// drain timeout, or until ctx is done (a second signal), and cuts those
// left; waits for the requests they leave running; stops the workers and
// waits for them; and ends with the quota's last sync and the release of
// the hooks' outbox. What follows the transfers is bounded by the
// shutdown timeout, whether or not ctx is done, so that a stop records
// every write that was counted. It returns what failed: a listener, or
// the last sync.
func (s *server) Shutdown(ctx context.Context) error {
	s.handler.Drain()
	s.log.Info("draining: no new connections; transfers in flight may finish", "timeout", s.drain, "connections", s.lim.Open())
	dctx, cancel := context.WithTimeout(ctx, s.drain)
	s3done := make(chan error, 1)
	if s.s3http != nil {
		go func() { s3done <- s.s3http.Shutdown(dctx) }()
	} else {
		s3done <- nil
	}
	err := errors.Join(s.http.Shutdown(dctx), <-s3done)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			s.log.Warn("second signal: cutting the transfers in flight", "connections", s.lim.Open())
		} else {
			s.log.Warn("drain timeout: cutting transfers still in flight", "connections", s.lim.Open())
		}
		s.http.Close()
		if s.s3http != nil {
			s.s3http.Close()
		}
	}
	if s.admin != nil {
		s.admin.Close()
	}

	ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	if s.requests.wait(ctx) != nil {
		s.log.Warn("requests still running after the shutdown timeout: what they write may not be counted")
	}
	s.stopWorkers()
	err, done := s.wait(ctx)
	if !done {
		s.log.Warn("background work still running after the shutdown timeout")
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if s.quota != nil {
		if err := s.quota.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("quota: %w", err))
		}
	}
	if s.hooks != nil {
		if err := s.hooks.Close(ctx); err != nil {
			s.log.Warn("hooks: the outbox's lease was not given up: it runs out by itself", "err", err)
		}
	}
	if sk, ok := s.store.(largo.StateKeeper); ok {
		if err := forgetAddress(ctx, sk.State()); err != nil {
			s.log.Warn("removing the record of this server's address", "err", err)
		}
	}
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// wait waits for the server's group, or for ctx: it returns the group's
// error (a listener's), and whether the group ended.
func (s *server) wait(ctx context.Context) (error, bool) {
	done := make(chan error, 1)
	go func() { done <- s.group.Wait() }()
	select {
	case err := <-done:
		return err, true
	case <-ctx.Done():
		return nil, false
	}
}

// close closes what the server holds: the listeners (closed already once
// served) and the store.
func (s *server) close() {
	for _, l := range []net.Listener{s.ln, s.adminLn, s.s3ln} {
		if l != nil {
			l.Close()
		}
	}
	if s.handed != nil {
		s.handed.Close()
	}
	if s.watcher != nil {
		s.watcher.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// requests counts the requests being answered, on every listener, so
// that a stop can wait for those the connections it cut leave running: a
// handler runs on until it notices its connection is gone, and may still
// write.
type requests struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n comes back to zero, for wait
}

// count returns h, its requests counted.
func (r *requests) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
		defer r.done()
		h.ServeHTTP(w, req)
	})
}

func (r *requests) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n--; r.n == 0 && r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
}

// wait returns once no request is being answered, or ctx's error once
// it is done.
func (r *requests) wait(ctx context.Context) error {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil
	}
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
