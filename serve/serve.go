// Package serve is largo's HTTP surface: an http.Handler that serves the
// files of a largo.Store (downloads with ranges and conditional requests,
// compressed where package encode's policy says so, folder listings as JSON
// or as the HTML page of package ui, folders as archives) and largo's own
// endpoints under the reserved prefix /_largo/ (health, readiness, metrics,
// the page's assets under UIPrefix). The folder page's own API (moves,
// new folders, searches, selections as archives, share links, signing
// in: package pageapi) is mounted behind the same front door
// (Config.Page); this package keeps the file protocol.
//
// Compression (compress.go) is a decision per response, not a wrapper
// around every one: a precompressed sidecar is found through the Store
// (Stat and Open of NAME.zst, NAME.br, NAME.gz), so it works on any store,
// and sent like any file, with sendfile and ranges; dynamic compression
// wraps only the responses it compresses. A file with a sidecar's name is
// taken for one only as Config.Sidecars says (package sidecar: when largo
// precompress recorded it and it and its original are unchanged since, or
// with --sidecars any when it is no older than its original); otherwise it
// is a file of its own, and listings and archives show it. Sidecars follow
// their file through every change in the write pipeline
// (sidecar.Follower), not here.
//
// Every request passes the same gate before it reaches a store: its path is
// parsed by largo.ParseName (400 for anything that could leave the root or be
// read two ways) and hidden names (dotfiles, dot-folders, largo's state
// folder) answer 404. Every response goes through a transfer.Response, which
// keeps sendfile, moves the write deadline as the client makes progress,
// and reports the bytes sent and the outcome to the access log and the
// Observer; every request body goes through its transfer.Body, so that a
// body the handler does not read is given up and the connection closed
// after the answer, never waited for. A panic in one request is
// recovered, logged, counted and answered 500; it never takes the process
// down.
//
// Work that grows with the number of files has a budget: a listing, and
// each folder of an archive, is sorted by package listing within a fixed
// memory per request and a budget shared by all requests (Config.Listing),
// spilling to disk beyond them, and answered 503 with a Retry-After when
// the shared budget has nothing left; a tar.zst takes one of the slots of
// dynamic compression.
//
// Writes (Config.Writes) are PUT (upload.go), multipart POST to a folder
// (multipart.go), DELETE (delete.go) and resumable uploads: tus mounted
// under ResumablePrefix, and the IETF protocol (Config.Resumer), which
// takes a PUT or POST that asks for it and serves its upload resources
// under ResumerPrefix; all go through the one write pipeline (package
// ingest). A write whose body says it is only part of the file
// (Content-Range, Upload-Complete: ?0) is never stored as the whole.
// Each is checked in an order that never reads the body of a refused
// request, so a client that sent Expect: 100-continue never sends it:
// writes on (405 otherwise), a browser's origin (403 for a cross-site
// write), the access rules (401 with WWW-Authenticate for a missing or
// wrong credential, 403 for a user without the permission; access.go),
// then the pipeline's admission: the name (400 for invalid, 403 for hidden or
// reserved), the conditions and digests' syntax, the announced size
// against the limit (413) and the free space less the reserve and the
// writes in flight (507), and If-None-Match/If-Match against the current
// file (412). Only then does the body stream, through a transfer.Body
// that moves the read deadline as bytes arrive, into the pipeline, which
// commits it atomically or aborts it.
//
// With Config.DAV, the WebDAV methods (PROPFIND, PROPPATCH, MKCOL, COPY,
// MOVE, LOCK, UNLOCK; dav.go) pass the same checks (writes on, origin, the
// permissions on the name and on a COPY's or MOVE's destination, and below
// them where the method reaches a whole folder: davNeeds) and go to
// package dav; a drop-box link passes none of them. GET, HEAD, PUT and
// DELETE stay this package's, and Finder's companion files are taken and
// dropped.
//
// Handlers return errors; one adapter (package reply) answers them with
// the one table (wire.Status, shared by every write protocol), and the
// client sees a one-line reason while the log sees the cause.
package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"largo"
	"largo/auth"
	"largo/digests"
	"largo/encode"
	"largo/expiry"
	"largo/gate"
	"largo/ingest"
	"largo/internal/reply"
	"largo/limit"
	"largo/links"
	"largo/listing"
	"largo/pace"
	"largo/record"
	"largo/sidecar"
	"largo/transfer"
	"largo/ui"
)

// Prefix is the reserved path prefix of largo's own endpoints. It can never
// collide with a file: names starting with "_largo" are refused there.
const Prefix = "/_largo/"

// UIPrefix is where the assets of the HTML pages are served.
const UIPrefix = Prefix + "ui/"

// Observer receives the events that metrics are made of. Implementations
// must be safe for concurrent use.
type Observer interface {
	// TransferStarted is called when a request for the file tree begins.
	TransferStarted()
	// BytesSent is called as body bytes reach a client.
	BytesSent(n int64)
	// TransferEnded is called once per started transfer with its outcome.
	TransferEnded(outcome string)
	// Panicked is called when a request panics.
	Panicked()
}

// Config configures a Handler. Only Store is required.
type Config struct {
	// Store holds the files to serve. Every call to it is decided by
	// Gate: a store that is not a *gate.Store already is wrapped in one.
	Store largo.Store
	// Gate decides every read and write (package gate); nil makes one of
	// Access, without share links, following symbolic links. Writes and
	// Resumable must write through the same gate's store.
	Gate *gate.Gate
	// State is the store's state area; nil means the state of Store
	// when it keeps one itself, else none.
	State largo.State
	// Files are the records of files (package record) in State: their
	// digests, the sidecars largo precompress wrote. Give it the records
	// the write pipeline keeps (ingest.Config.Files), so that what a
	// write records is served at once; nil means records of State's own,
	// which find a record written elsewhere once their negative answers
	// expire.
	Files *record.Files
	// Logger receives the access log (one line per request) and errors.
	// Nil discards them.
	Logger *slog.Logger
	// AccessLog, when set, receives the access log in Logger's stead:
	// each line built by hand in the bytes slog.TextHandler (with no
	// options) would write for it, and written whole in one Write, which
	// costs a request a fraction of what the line costs through slog.
	// Errors still go to Logger. For any other format, leave it nil and
	// give Logger the handler.
	AccessLog io.Writer
	// Observer receives metrics events. Nil ignores them.
	Observer Observer
	// Metrics serves MetricsPath, to the principals a rule of the access
	// file names for it (see metrics). Nil answers 404 there, as when the
	// metrics live on a separate admin listener only.
	Metrics http.Handler
	// IdleTimeout cuts a client that takes no bytes for this long. Zero
	// means no limit.
	IdleTimeout time.Duration
	// MinRate, in bytes per second, cuts a client slower than this on
	// average once the first IdleTimeout has passed. Zero means none.
	MinRate int64
	// Rates caps bandwidth, shared by key: per transfer, user, client
	// address and share link (pace.go). Nil caps nothing.
	Rates *pace.Limits
	// Listing bounds the memory of folder listings: each holds at most
	// Listing.Max (listing.DefaultMax when zero) and all together at most
	// Listing.Budget, one client at most the budget's share
	// (gate.ClientKeys), beyond which a listing is answered 503 with a
	// Retry-After; what does not fit spills to Listing.Dir (os.TempDir()
	// when empty). A nil Budget means one of listing.DefaultBudget, a
	// quarter of it a client.
	Listing listing.Config
	// Compress compresses compressible files on the fly for clients that
	// accept it. Nil turns dynamic compression off; precompressed
	// sidecars are served either way. Its slots also bound tar.zst
	// archives: give it to NewArchives too.
	Compress *encode.Encoders
	// Archives answers folders as archives (?archive=FORMAT); give the
	// page's API (Page) the same one. Nil means one of the handler's own
	// (NewArchives), spilling to Listing.Dir and compressing tar.zst with
	// Compress.
	Archives *Archives
	// Sidecars says which NAME.zst, NAME.br or NAME.gz stand for NAME as
	// its encoding (package sidecar); the write pipeline's Derived should
	// follow the same policy. Nil takes only the sidecars largo precompress
	// recorded in Files, while they and NAME keep the ETags recorded:
	// anything else is a file of its own, served, listed and archived as
	// such. sidecar.NewPolicy with any takes any fresh one, whoever wrote
	// it, as nginx's gzip_static does.
	Sidecars *sidecar.Policy
	// Digests answers the SHA-256 recorded for each file's version
	// (package digests): Repr-Digest on downloads, SHA256SUMS, the JSON
	// listing's "sha256"; nil means one over Files.
	Digests *digests.Keeper
	// Cache, when set, is the store downloads open files through (the
	// files' and their precompressed sidecars' bytes): a read-only store
	// over the same files as Store, in front of it (an open-file cache,
	// package filecache), behind the same gate, which it asks for the
	// physical names the gate decides for each request, as Store would
	// be. A file it keeps is answered from memory, with the headers of its
	// version derived once (kept.go). Nil opens through Store.
	Cache largo.Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Expiry tells, in listings, when each file expires (package
	// expiry); nil tells nothing.
	Expiry *expiry.Expiry

	// Writes turns writes on: PUT, POST (multipart forms) and DELETE in
	// the file tree, and Resumable under Prefix+"uploads/", all through
	// this pipeline, which holds the limits (size, reserve, folders). Nil
	// answers writes 405 with an Allow header naming the read methods.
	Writes *ingest.Pipeline
	// Access identifies requests (credentials, failed sign-ins) under
	// the policy the Gate decides by; it must be the gate's. Nil, with
	// no Gate, lets everyone do everything (writes still need Writes).
	Access *auth.Access
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// read and write from a browser with their credentials; none means no
	// CORS: only the server's own pages may.
	CORSOrigins []string
	// Hosts, when not nil, are the only host names the server answers
	// (421 for others): a server on a loopback address answers only
	// loopback names, which defeats DNS rebinding.
	Hosts []string
	// Resumable serves resumable uploads under Prefix+"uploads/", behind
	// the same auth. Nil answers 404 there.
	Resumable http.Handler
	// Resumer takes the writes that ask to be resumable in the IETF
	// protocol, and serves their upload resources under ResumerPrefix,
	// behind the same auth. Nil stores such writes like any other when
	// they carry the whole file, and refuses them (400) when they do not.
	Resumer Resumer
	// DAV serves the WebDAV methods at the files' URLs, behind the same
	// access rules (PROPFIND needs list or read, PROPPATCH, MKCOL, LOCK and
	// UNLOCK write, COPY read of the source and write of the destination,
	// MOVE read and delete of the source and write of the destination);
	// OPTIONS then announces DAV: 1, 2. Writes of Finder's companion files
	// it Discards are taken and dropped. Nil answers the DAV methods 405.
	DAV WebDAV
	// Page is the folder page's own API (package pageapi), served behind
	// the same front door as the file tree: its routes under Prefix, the
	// sign-in (GET folder/?login=PATH) and the controls of the folder
	// page. Nil serves none of them: the page then only lists, uploads
	// and downloads.
	Page Page
	// Uploads receives upload metrics events. Nil ignores them.
	Uploads UploadObserver
	// Compression receives compression metrics events. Nil ignores them.
	Compression CompressionObserver
}

// Page is the folder page's own API (package pageapi), which the handler
// mounts behind its front door: every request reaches it with its host
// name checked, its principal in the context (package gate), its pacing
// and CORS applied, and, under Prefix, its path parsed. Implementations
// must be safe for concurrent use.
type Page interface {
	// Register adds the page's routes, all under Prefix, to mux, the
	// mux of the reserved prefix.
	Register(mux *http.ServeMux)
	// Login answers a GET or HEAD of a folder with ?login=PATH, or of
	// one its visitor may not see yet.
	Login(w http.ResponseWriter, r *http.Request) error
	// Logout answers a GET or HEAD of a folder with ?logout=PATH, or of
	// one its visitor may not see.
	Logout(w http.ResponseWriter, r *http.Request) error
	// Controls sets what the page of the folder f.Name offers its
	// visitor besides its rows and its upload area (f.Upload, set
	// first): who is signed in or how to sign in, the share form, the
	// file manager.
	Controls(r *http.Request, f *ui.Folder)
}

// CompressionObserver receives the events that compression metrics are
// made of. Implementations must be safe for concurrent use.
type CompressionObserver interface {
	// Compressed is called once per response of a compressed
	// representation (HEAD and 304 included), with its coding
	// and its source: "sidecar" or "dynamic"; or "refused" when the
	// response was to be compressed on the fly but every slot was taken,
	// and went out uncompressed.
	Compressed(coding, source string)
}

// UploadObserver receives the events that upload metrics are made of.
// Implementations must be safe for concurrent use.
type UploadObserver interface {
	// BytesReceived is called as body bytes of a write arrive.
	BytesReceived(n int64)
	// UploadEnded is called once per PUT or POST write with its outcome.
	UploadEnded(outcome string)
}

// Handler serves a store over HTTP. Create one with New; it is safe for
// concurrent use.
type Handler struct {
	cfg      Config
	log      *slog.Logger
	errs     reply.Errors // answers what handlers return
	obs      Observer
	sent     func(int64) // obs.BytesSent, made once: a method value per request is an allocation
	lines    linePool    // buffers of the access lines (Config.AccessLog)
	up       UploadObserver
	comp     CompressionObserver
	own      *http.ServeMux // the reserved prefix
	ui       *ui.UI
	draining atomic.Bool
	// sidecars is Config.Sidecars, or the policy of the records of
	// Config.State.
	sidecars *sidecar.Policy
	// digests answers the digests of files' versions.
	digests *digests.Keeper
	// gate decides every store call (cfg.Store is its store).
	gate *gate.Gate
	// reads opens downloads' files: cfg.Cache behind the gate, or
	// cfg.Store.
	reads *gate.Store
	// anyone is the context of anyone's requests that the lane answers
	// again (replay.go).
	anyone context.Context
}

// New returns a Handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, anyone: gate.With(context.Background(), gate.Anonymous())}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.errs = reply.Errors{Log: h.log}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	h.sent = h.obs.BytesSent
	h.up = cfg.Uploads
	if h.up == nil {
		h.up = nopObserver{}
	}
	h.comp = cfg.Compression
	if h.comp == nil {
		h.comp = nopObserver{}
	}
	if h.cfg.Now == nil {
		h.cfg.Now = time.Now
	}
	if h.cfg.Archives == nil {
		h.cfg.Archives = NewArchives(h.cfg.Listing.Dir, nil, cfg.Compress)
	}
	if h.cfg.Listing.Budget == nil {
		h.cfg.Listing.Budget = limit.NewBudget(listing.DefaultBudget, 0)
	}
	if h.cfg.State == nil {
		if sk, ok := cfg.Store.(largo.StateKeeper); ok {
			h.cfg.State = sk.State()
		}
	}
	h.gate = h.cfg.Gate
	if h.gate == nil {
		if h.cfg.Access == nil {
			h.cfg.Access = auth.New(auth.OneUser("", true), h.cfg.Now)
		}
		gc := gate.Config{Access: h.cfg.Access, Logger: h.log}
		gc.Resolver, _ = h.cfg.Store.(largo.Resolver)
		h.gate = gate.New(gc)
	}
	if h.cfg.Access == nil {
		h.cfg.Access = h.gate.Access()
	}
	if _, gated := h.cfg.Store.(*gate.Store); !gated {
		h.cfg.Store = h.gate.Store(h.cfg.Store)
	}
	h.reads = h.cfg.Store.(*gate.Store)
	if cfg.Cache != nil {
		h.reads = h.gate.Store(cfg.Cache)
	}
	if w := h.cfg.Writes; w != nil {
		if _, gated := w.Store().(*gate.Store); !gated {
			panic("serve: the write pipeline must write through the gate's store")
		}
	}
	if h.cfg.Files == nil && h.cfg.State != nil {
		h.cfg.Files = record.NewFiles(record.New(h.cfg.State, record.Options{Now: h.cfg.Now}), record.FilesOptions{})
	}
	h.sidecars = h.cfg.Sidecars
	if h.sidecars == nil {
		h.sidecars = sidecar.NewPolicy(sidecar.NewChecker(h.cfg.Files), false, contentType)
	}
	h.digests = h.cfg.Digests
	if h.digests == nil {
		h.digests = digests.New(h.cfg.Files, digests.Options{Logger: h.log})
	}
	h.ui = ui.New(UIPrefix)
	h.own = http.NewServeMux()
	h.own.Handle("GET "+UIPrefix, h.errs.Handler(h.ui.Asset))
	h.own.HandleFunc("GET "+Prefix+"healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "ok")
	})
	h.own.HandleFunc("GET "+Prefix+"readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if h.draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if cfg.Metrics != nil {
		h.own.Handle("GET "+MetricsPath, h.errs.Handler(h.metrics))
	}
	if cfg.Writes != nil && cfg.Resumable != nil {
		h.own.Handle(ResumablePrefix, h.resumable(cfg.Resumable))
	}
	if cfg.Writes != nil && cfg.Resumer != nil {
		h.own.Handle(ResumerPrefix, h.resumable(cfg.Resumer))
	}
	if cfg.Page != nil {
		cfg.Page.Register(h.own)
	}
	h.own.Handle(Prefix, h.errs.Handler(func(http.ResponseWriter, *http.Request) error {
		return reply.ErrNoEndpoint
	}))
	return h
}

// Drain makes the readiness endpoint answer 503 from now on, so that load
// balancers stop sending new clients while transfers in flight finish.
func (h *Handler) Drain() { h.draining.Store(true) }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.front(w, r, strings.HasPrefix(r.URL.Path, Prefix), h.route)
}

// Protocol is a front end of another protocol, served on a listener of
// its own beside the file tree (the S3 API, package s3api): it finds who
// each request comes from itself, and answers in its own terms.
// Implementations must be safe for concurrent use.
type Protocol interface {
	// Identify returns r carrying its principal (gate.With), or the
	// refusal of its credential; it reads nothing of the body.
	Identify(r *http.Request) (*http.Request, error)
	// Refuse answers err, a refusal of Identify's.
	Refuse(w http.ResponseWriter, r *http.Request, err error)
	// ServeHTTP serves a request Identify returned.
	http.Handler
}

// Front returns the handler of p: behind the front door of every request
// of the file tree (the transfer wrappers, which keep sendfile and move
// the deadlines as the client makes progress, a panic recovered, the
// access log, the metrics of transfers and uploads), then p's Identify,
// the bandwidth caps of the principal it finds, and p itself.
func (h *Handler) Front(p Protocol) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.front(w, r, false, func(tw *transfer.Response, r *http.Request) {
			r, err := p.Identify(r)
			if err != nil {
				p.Refuse(tw, r, err)
				return
			}
			defer h.pace(tw, r)()
			p.ServeHTTP(tw, r)
		})
	})
}

// front serves r by route, wrapped in the transfer layer, logged and
// counted; own marks a request for the server's own endpoints, which
// counts as no transfer.
func (h *Handler) front(w http.ResponseWriter, r *http.Request, own bool, route func(*transfer.Response, *http.Request)) {
	start := h.cfg.Now()
	opt := transfer.Options{IdleTimeout: h.cfg.IdleTimeout, MinRate: h.cfg.MinRate, Now: h.cfg.Now}
	if !own {
		opt.Sent = h.sent
		h.obs.TransferStarted()
	}
	tw := transfer.NewResponse(w, opt)
	tw.Header()["X-Content-Type-Options"] = nosniff
	var body *transfer.Body
	if r.Body != nil && r.Body != http.NoBody {
		// Every body, read or not: one the handler does not read is given
		// up, and its connection closed after the answer, rather than
		// waited for (see package transfer).
		body = tw.Body(r, transfer.BodyOptions{
			IdleTimeout: h.cfg.IdleTimeout, MinRate: h.cfg.MinRate, Now: h.cfg.Now,
			Received: h.up.BytesReceived,
		})
		// A copy: the server keeps its own Request, whose Body it inspects
		// after the handler (an unread Expect: 100-continue body means
		// closing the connection rather than reading it).
		r2 := *r
		r2.Body = body
		r = &r2
	}

	panicked, abort := h.serve(tw, r, route)
	tw.Finish()

	outcome := tw.Outcome(r.Method)
	if body != nil {
		body.Close()
		if hasBody(r) {
			outcome = writeOutcome(tw, body)
		}
	}
	switch {
	case panicked && outcome == transfer.Complete:
		outcome = transfer.Error
	case outcome == transfer.Error && r.Context().Err() != nil:
		// The client left while the source was still being read (a store
		// request cancelled with it): the transfer was aborted, not failed.
		outcome = transfer.Aborted
	}
	if !own {
		h.obs.TransferEnded(string(outcome))
		if (r.Method == http.MethodPut || r.Method == http.MethodPost) && !h.resumed(r) {
			h.up.UploadEnded(string(outcome))
		}
	}
	end := h.cfg.Now()
	h.accessLog(r, tw, outcome, end, end.Sub(start))
	if abort {
		// The status line is out: the only honest signal left is to cut
		// the connection, which net/http does for this value, quietly.
		panic(http.ErrAbortHandler)
	}
}

// resumed reports whether a write went to the Resumer, whose uploads
// count their own end (once, when they finish or are abandoned), not the
// end of each request.
func (h *Handler) resumed(r *http.Request) bool {
	return h.cfg.Writes != nil && h.cfg.Resumer != nil && h.cfg.Resumer.Takes(r)
}

// serve routes the request and recovers from a panic in it. abort reports a
// panic after the response had begun.
func (h *Handler) serve(tw *transfer.Response, r *http.Request, route func(*transfer.Response, *http.Request)) (panicked, abort bool) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panicked, abort = true, true
			return
		}
		h.obs.Panicked()
		h.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		panicked = true
		if tw.Status() != 0 {
			abort = true
			return
		}
		reply.Text(tw, http.StatusInternalServerError, "internal error")
	}()
	route(tw, r)
	return
}

// route serves a request of the file tree or of the server's own
// endpoints.
func (h *Handler) route(tw *transfer.Response, r *http.Request) {
	own := strings.HasPrefix(r.URL.Path, Prefix) && !strings.HasPrefix(r.URL.Path, links.URLPrefix)
	r, err := h.guard(r)
	if err != nil {
		h.errs.Fail(tw, r, err)
		return
	}
	if v := viewOf(r); v != nil && v.Uploads {
		own = true // a drop box's tus creation (dropupload.go)
	}
	defer h.pace(tw, r)()
	if !strings.HasPrefix(r.URL.Path, ResumablePrefix) && h.cors(tw, r) {
		return // a preflight, answered (tusd answers its own)
	}
	if own { // a share link's request, rewritten, never reaches these
		if _, err := largo.ParseName(r.URL.Path); err != nil {
			h.errs.Fail(tw, r, err)
			return
		}
		if r.URL.RawPath != "" {
			// An escape the routes do not spell (/_largo%2fmetrics): no
			// route has it, and the answer is this server's own.
			h.errs.Fail(tw, r, reply.ErrNoEndpoint)
			return
		}
		h.own.ServeHTTP(tw, r)
		return
	}
	if err := h.files(tw, r); err != nil {
		h.errs.Fail(tw, r, err)
	}
}

// files serves the file tree.
func (h *Handler) files(w http.ResponseWriter, r *http.Request) error {
	name, err := largo.ParseName(r.URL.Path)
	if err != nil {
		return err
	}
	if perm, ok := davMethods[r.Method]; ok && h.cfg.DAV != nil {
		return h.dav(w, r, name, perm)
	}
	switch r.Method {
	case http.MethodPut, http.MethodDelete:
		if h.cfg.DAV != nil && h.cfg.Writes != nil && h.cfg.DAV.Discards(name) {
			// A hidden name, which the gate never lets through: the
			// folder's rule is what is asked.
			if err := h.gate.Check(r.Context(), auth.Write, largo.Join(largo.Parent(name), gate.NewName), false); err != nil {
				return err
			}
			return h.discard(w, r)
		}
		return h.write(w, r, name)
	case http.MethodPost:
		return h.write(w, r, name)
	}
	if largo.Reserved(name) {
		return fmt.Errorf("%s: hidden: %w", name, largo.ErrNotFound)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return h.get(w, r, name)
	case http.MethodOptions:
		h.options(w.Header(), h.gate.LinkOf(r.Context()))
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return &reply.MethodError{Allow: h.allow()}
}

// accessLog writes the request's line.
func (h *Handler) accessLog(r *http.Request, tw *transfer.Response, outcome transfer.Outcome, end time.Time, d time.Duration) {
	l := accessLine{
		at:       end,
		method:   r.Method,
		path:     r.URL.Path,
		query:    r.URL.RawQuery,
		status:   loggedStatus(tw.Status(), outcome),
		bytes:    tw.Written(),
		duration: d,
		client:   r.RemoteAddr,
		outcome:  string(outcome),
		rng:      r.Header.Get("Range"),
		encoding: tw.Header().Get("Content-Encoding"),
	}
	if err := tw.Err(); err != nil && outcome != transfer.Complete {
		l.err = err.Error()
	}
	h.writeLine(r.Context(), &l)
}

// writeLine writes an access line: to Config.AccessLog, or through the
// logger.
func (h *Handler) writeLine(ctx context.Context, l *accessLine) {
	if h.cfg.AccessLog != nil {
		l.write(h.cfg.AccessLog, &h.lines) // as through slog: a failed log write fails no request
		return
	}
	var a [11]slog.Attr
	h.log.LogAttrs(ctx, slog.LevelInfo, "request", l.attrs(a[:0])...)
}

// loggedStatus is the status an access line gives: the one answered, or,
// for an error answer to a client that went away before it (an upload
// cut off: its body incomplete), 499, as nginx logs a client that closed
// its request: no one read the 400, and the line does not blame a
// request that was never finished.
func loggedStatus(status int, outcome transfer.Outcome) int {
	if outcome == transfer.Aborted && status >= 400 {
		return statusClientClosed
	}
	return status
}

// statusClientClosed is the status logged for a request whose client
// went away before its answer (nginx's 499).
const statusClientClosed = 499

type nopObserver struct{}

func (nopObserver) TransferStarted()          {}
func (nopObserver) BytesSent(int64)           {}
func (nopObserver) TransferEnded(string)      {}
func (nopObserver) Panicked()                 {}
func (nopObserver) BytesReceived(int64)       {}
func (nopObserver) UploadEnded(string)        {}
func (nopObserver) Compressed(string, string) {}

// Header values every file response carries, shared rather than made per
// request (Header.Set makes a slice each time). net/http only reads them,
// and Header.Add appends to a full slice, which copies it: never written.
var (
	nosniff = []string{"nosniff"}
	sandbox = []string{"sandbox"}
)
