// Package resumable serves resumable uploads over one staging: the tus 1.0
// protocol (core, creation, creation-with-upload, creation-defer-length,
// termination, concatenation) through tusd (github.com/tus/tusd/v2), and
// the IETF protocol (draft-ietf-httpbis-resumable-upload) as a second
// front end, IETF (ietf.go).
//
// Concatenation is what makes one file's upload parallel: partial uploads
// sent at once over several connections, then a final upload that joins
// them. Finishing must not grow with the file, so the join never copies a
// byte through largo, and where it can, no byte at all (concat.go): a
// partial that announces its place in the file (concat-id, concat-offset,
// concat-length, as largo's clients send them) writes straight into its
// group's one sparse staged file on a folder, which the final renames;
// the partials of a plain tus client, whose places only the final's list
// gives, are joined by the kernel (copy_file_range, a reflink where the
// filesystem shares blocks) on a folder and by the S3 server
// (UploadPartCopy) on a bucket. tusd's own stores would copy them through
// the process (its file store appends with io.Copy, its S3 store
// downloads and uploads again any partial under 5 MiB). On a filesystem
// without shared blocks, such as ext4, a kernel copy runs at the disk's
// speed: a 1 GiB join of four partials took 9 s on the machine this was
// written on, which is why largo's clients place their partials. The whole
// file's SHA-256 is computed as the partials arrive, following the
// contiguous prefix (prefix.go), never by reading the whole file again
// once its last byte is in.
//
// Every upload is held to the rules of a PUT through the write pipeline
// (package ingest): admitted at creation (Pipeline.Check), each of its
// chunks admitted as it arrives, its staged bytes held against the
// quotas (admission.go), hashed as it arrives (hash.go) and checked against a sha256 metadata value or a
// Repr-Digest, placed when finished (Pipeline.Place), answered with the
// pipeline's statuses, kept on record when finished (finished.go) and
// removed when abandoned for Config.Expiry. An upload belongs to the
// principal that created it (package gate), who alone reaches it and with
// whose rights of the moment it is placed (owner.go).
//
// The upload state is a Staging (staging.go) in the store's own state
// area: DiskStaging under a folder's .largo/tus, S3Staging, tusd's S3
// store, under a bucket's, chosen by what the store offers (StagingFor).
// Within one server, requests on an upload take turns (tusd's memory
// locker; ietfflight.go stops an IETF append in flight when a new request
// on its upload arrives); across servers sharing a store, an append holds
// a lease on its upload in the state area (lease.go), and an append
// through another server meanwhile is refused. The reasons, and what tusd
// does and does not do, are in the design document, docs/design.md
// ("Resumable uploads").
//
// A Handler is safe for concurrent use.
package resumable

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"

	"largo"
	"largo/ingest"
	"largo/internal/keylock"
	"largo/wire"
)

// Metadata keys read from an upload.
const (
	KeyFilename = "filename"
	KeyFolder   = "folder"
	KeySHA256   = "sha256"
	// keyIfNoneMatch and keyIfMatch hold the creation request's
	// conditions until the upload finishes. Like every key that begins
	// with serverKeys (owner.go), they are the server's own.
	keyIfNoneMatch = "largo-if-none-match"
	keyIfMatch     = "largo-if-match"
)

// DefaultExpiry is how long an upload may go without a byte before it is
// removed, when Config.Expiry is zero.
const DefaultExpiry = 24 * time.Hour

// Observer receives the events that upload metrics are made of.
type Observer interface {
	// PendingBytes moves the count of bytes held in unfinished uploads.
	PendingBytes(delta int64)
	// UploadEnded is called once per upload that finished, failed its
	// checks, or expired.
	UploadEnded(outcome string)
}

// Config configures a Handler. Writes and BasePath are required.
type Config struct {
	// Writes is the write pipeline finished uploads are placed through;
	// its rules (names, conditions, size, space, folders) also admit
	// uploads at creation. A store that implements largo.Adopter takes
	// the staged bytes without passing them through largo.
	Writes *ingest.Pipeline
	// Staging keeps the unfinished uploads; nil means the staging of the
	// store's own state area (StagingFor).
	Staging Staging
	// State is the store's state area, where finished uploads are kept on
	// record and appends take their leases; nil means the state of the
	// pipeline's store when it keeps one itself (a store behind the
	// access gate does not: give it here).
	State largo.State
	// BasePath is the URL path the handler is mounted at, with its
	// trailing slash.
	BasePath string
	// Expiry is how long an unfinished upload may go without a byte before
	// it is removed; zero means DefaultExpiry.
	Expiry time.Duration
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// send uploads from a browser; none means no CORS at all: only pages
	// of the server's own origin may.
	CORSOrigins []string
	// IdleTimeout cuts a client that sends no bytes for this long; zero
	// means tusd's default (a minute).
	IdleTimeout time.Duration
	// Logger receives commits, rejections and expiries; nil discards them.
	Logger *slog.Logger
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Lease is how long an append's lease on its upload lasts unless
	// renewed (lease.go); zero means DefaultLease.
	Lease time.Duration
	// Forwarded makes the upload URLs tus answers with follow the scheme
	// and host a proxy in front says the client used (X-Forwarded-Proto,
	// X-Forwarded-Host, Forwarded). Set it only where those fields reach
	// the handler from trusted proxies alone (auth.Proxies strips them
	// from every other peer).
	Forwarded bool
}

// Handler serves resumable uploads. Create one with New, and run Expire
// (or Run) to remove abandoned uploads.
type Handler struct {
	cfg   Config
	log   *slog.Logger
	obs   Observer
	tus   http.Handler
	cors  tusd.CorsConfig // tusd's, for the answers written outside it
	store *dataStore

	state  largo.State // nil: finished uploads are not kept on record
	locks  keylock.Set // by upload ID, held while an upload is placed
	leases *leases     // nil: appends are serialised in this server only

	mu      sync.Mutex
	active  map[string]int  // uploads with a chunk being written
	hashing map[string]bool // groups whose hasher runs: whether to look again

	hashLocks keylock.Set    // by group, held while its prefix is hashed
	hashers   sync.WaitGroup // the groups' hashers (prefix.go)
	// hashCtx is the hashers', done once Run has ended (stopHashing).
	hashCtx     context.Context
	stopHashing context.CancelFunc

	holdMu sync.Mutex
	holds  map[string]*heldUpload // by upload ID: their holds on the quotas (admission.go)
}

// New returns a Handler for cfg, creating cfg.Dir if needed and counting
// the bytes of the uploads already there as pending.
func New(cfg Config) (*Handler, error) {
	if _, ok := cfg.Writes.Store().(largo.Creator); !ok {
		return nil, fmt.Errorf("resumable uploads: %w", largo.ErrUnsupported)
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, active: map[string]int{}, hashing: map[string]bool{}, holds: map[string]*heldUpload{}}
	h.hashCtx, h.stopHashing = context.WithCancel(context.Background())
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	if cfg.Staging == nil {
		st, err := StagingFor(cfg.Writes.Store())
		if err != nil {
			return nil, err
		}
		cfg.Staging = st
		h.cfg.Staging = st
	}
	h.store = &dataStore{st: cfg.Staging, h: h}
	h.state = cfg.State
	if sk, ok := cfg.Writes.Store().(largo.StateKeeper); ok && h.state == nil {
		h.state = sk.State()
	}
	if h.state != nil {
		h.leases = newLeases(h.state, cfg.Lease, cfg.Now)
	}
	composer := tusd.NewStoreComposer()
	composer.UseCore(h.store)
	composer.UseTerminater(h.store)
	composer.UseLengthDeferrer(h.store)
	composer.UseConcater(h.store)
	memorylocker.New().UseIn(composer)
	cors := tusd.CorsConfig{Disable: true}
	if len(cfg.CORSOrigins) > 0 {
		cors = tusd.DefaultCorsConfig
		quoted := make([]string, len(cfg.CORSOrigins))
		for i, o := range cfg.CORSOrigins {
			quoted[i] = regexp.QuoteMeta(o)
		}
		cors.AllowOrigin = regexp.MustCompile("^(" + strings.Join(quoted, "|") + ")$")
		cors.AllowCredentials = true
		cors.ExposeHeaders += ", ETag, Repr-Digest, Content-Location"
	}
	h.cors = cors
	tcfg := tusd.Config{
		Cors:                      &cors,
		StoreComposer:             composer,
		BasePath:                  cfg.BasePath,
		MaxSize:                   cfg.Writes.MaxSize(),
		DisableDownload:           true,
		RespectForwardedHeaders:   cfg.Forwarded,
		NetworkTimeout:            cfg.IdleTimeout,
		Logger:                    tusLogger(h.log),
		PreUploadCreateCallback:   h.preCreate,
		PreFinishResponseCallback: h.finish,
	}
	t, err := tusd.NewHandler(tcfg)
	if err != nil {
		return nil, err
	}
	h.tus = http.StripPrefix(strings.TrimSuffix(cfg.BasePath, "/"), t)
	pending, err := cfg.Staging.Pending(context.Background())
	if err != nil {
		return nil, err
	}
	h.obs.PendingBytes(pending)
	return h, nil
}

// ServeHTTP implements http.Handler. A Repr-Digest field that cannot be
// read is refused before any byte of the body is; a request on an upload
// that is not its principal's is answered as one on no upload (404),
// before tusd takes the upload's lock (which would stop a request in
// flight on it).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPatch || r.Method == http.MethodPost {
		r = r.WithContext(withChunkSize(r.Context(), r.ContentLength))
	}
	if _, err := reprDigest(r.Header); err != nil {
		code, reason := wire.Status(err)
		w.Header().Set("Tus-Resumable", "1.0.0")
		http.Error(w, reason, code)
		return
	}
	if ids := h.finalIDs(r); ids != nil {
		// One final upload per list of partials at a time, and a list
		// joined already answered with its final upload.
		unlock := h.locks.Lock(concatKey(ids))
		defer unlock()
		if h.answerFinal(w, r, ids) {
			return
		}
	}
	switch r.Method {
	case http.MethodHead, http.MethodPatch, http.MethodDelete:
		id := h.uploadID(r.URL.Path)
		if id == "" {
			break
		}
		if err := h.reach(context.WithoutCancel(r.Context()), id); err != nil {
			h.outside(w, r)
			if errors.Is(err, errNoUpload) {
				writeTusError(w, tusd.ErrNotFound)
			} else {
				writeTusError(w, h.tusErr("open", err))
			}
			return
		}
		if r.Method != http.MethodDelete && h.answerFinished(w, r, id) {
			return
		}
	}
	h.tus.ServeHTTP(w, r)
}

// reprDigest returns the sha-256 of a request's Repr-Digest field, or nil.
func reprDigest(hdr http.Header) ([]byte, error) {
	v := hdr.Values("Repr-Digest")
	if len(v) == 0 {
		return nil, nil
	}
	return wire.ParseDigest(strings.Join(v, ","))
}

// Refusals of tus requests that are no store's.
var (
	errFilenameRequired = wire.Refuse(http.StatusBadRequest, "the filename metadata is required")
	errBadSHA256        = wire.Refuse(http.StatusBadRequest, "sha256 metadata must be 64 hex digits or base64 of 32 bytes")
)

// targetName returns the file an upload writes: rel, a relative name
// that may hold slashes, under the folder dir ("" for the root), read as
// a request's path is read (largo.ParseName) and held to the write
// pipeline's policy of names (ingest.CheckName). Each protocol names its
// target its own way (tus by metadata, an IETF PUT by its URL, an IETF
// POST by a filename under the folder of its URL: see requestTarget);
// every way ends here, so that one name is taken or refused alike
// whichever way it came.
func targetName(dir, rel string) (string, error) {
	name, err := largo.ParseName("/" + largo.Join(dir, rel))
	if err != nil {
		return "", err
	}
	if err := ingest.CheckName(name); err != nil {
		return "", err
	}
	return name, nil
}

// metadataName returns the relative name tus-style metadata gives a
// file: its filename, under its folder if it names one; "" if it names
// no file.
func metadataName(meta tusd.MetaData) string {
	if meta[KeyFilename] == "" {
		return ""
	}
	return largo.Join(strings.Trim(meta[KeyFolder], "/"), meta[KeyFilename])
}

// parseTarget reads an upload's metadata into the write it asks for:
// where (metadataName, targetName), under which condition, with which
// digest. Size is left unknown. Uploads of both protocols are placed as
// it reads them.
func parseTarget(meta tusd.MetaData) (ingest.Target, error) {
	t := ingest.Target{Size: -1}
	rel := metadataName(meta)
	if rel == "" {
		return t, errFilenameRequired
	}
	name, err := targetName("", rel)
	if err != nil {
		return t, err
	}
	t.Name = name
	if v := meta[KeySHA256]; v != "" {
		if t.SHA256 = parseSHA256(v); t.SHA256 == nil {
			return t, errBadSHA256
		}
	}
	t.Cond = largo.Condition{IfNoneMatch: meta[keyIfNoneMatch] == "*", IfMatch: meta[keyIfMatch]}
	t.Protocol, t.Metadata, t.Hooked = hookFields(meta)
	return t, nil
}

// parseSHA256 reads a SHA-256 in hex or base64, or returns nil.
func parseSHA256(v string) []byte {
	if b, err := hex.DecodeString(v); err == nil && len(b) == 32 {
		return b
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == 32 {
			return b
		}
	}
	return nil
}

// Target returns the name a tus creation request asks for, read from its
// Upload-Metadata exactly as the upload itself will read it, so that a
// check of the name (the access rules, before the request reaches h)
// judges the file the upload will write. An error means the creation
// will be refused.
func (h *Handler) Target(hdr http.Header) (string, error) {
	t, err := parseTarget(tusd.ParseMetadataHeader(hdr.Get("Upload-Metadata")))
	return t.Name, err
}

// preCreate admits a new upload through the write pipeline before tusd
// stores anything of it: the metadata (no key of the server's own), the
// name, the conditions (kept in the metadata for the finish, with the
// creator), the target's folder, the size limit and the free space; a
// partial or final upload as concat.go says.
func (h *Handler) preCreate(ev tusd.HookEvent) (tusd.HTTPResponse, tusd.FileInfoChanges, error) {
	var none tusd.FileInfoChanges
	if err := checkClientKeys(ev.Upload.MetaData); err != nil {
		return tusd.HTTPResponse{}, none, h.tusErr("create", err)
	}
	owner, err := creator(ev.Context)
	if err != nil {
		return tusd.HTTPResponse{}, none, h.tusErr("create", err)
	}
	meta := maps.Clone(ev.Upload.MetaData)
	if meta == nil {
		meta = tusd.MetaData{}
	}
	meta[keyOwner] = owner
	cond, err := wire.Condition(http.Header(ev.HTTPRequest.Header))
	if err != nil {
		return tusd.HTTPResponse{}, none, h.tusErr("create", err)
	}
	if cond.IfNoneMatch {
		meta[keyIfNoneMatch] = "*"
	}
	if cond.IfMatch != "" {
		meta[keyIfMatch] = cond.IfMatch
	}
	info := ev.Upload
	info.MetaData = meta
	switch {
	case info.IsPartial:
		err = h.admitPartial(ev.Context, info)
	case info.IsFinal:
		err = h.admitFinal(ev.Context, info)
	default:
		if _, _, err = parsePlacement(info); err != nil {
			break
		}
		var t ingest.Target
		if t, err = parseTarget(meta); err == nil {
			if !info.SizeIsDeferred {
				t.Size = info.Size
			}
			err = h.accept(ev.Context, t, meta)
		}
	}
	if err != nil {
		return tusd.HTTPResponse{}, none, h.tusErr("create", err)
	}
	return tusd.HTTPResponse{}, tusd.FileInfoChanges{MetaData: meta}, nil
}

// finish places an upload whose last bytes just arrived, like a PUT of
// them (see place), and answers with where they went. A partial upload is
// placed by its final, never alone.
func (h *Handler) finish(ev tusd.HookEvent) (tusd.HTTPResponse, error) {
	if ev.Upload.IsPartial {
		return tusd.HTTPResponse{}, nil // its final places it
	}
	unlock := h.locks.Lock(ev.Upload.ID)
	defer unlock()
	d, err := h.place(context.WithoutCancel(ev.Context), ev.Upload, http.Header(ev.HTTPRequest.Header))
	if err != nil {
		return tusd.HTTPResponse{}, h.tusErr("finish", err)
	}
	return tusd.HTTPResponse{Header: d.header()}, nil
}

// staged describes a finished upload's bytes for the pipeline.
func (h *Handler) staged(ctx context.Context, info tusd.FileInfo) ingest.Staged {
	st := h.cfg.Staging
	s := ingest.Staged{
		Name:   st.Staged(info.ID),
		Size:   info.Size,
		SHA256: h.store.finishedSum(ctx, info.ID, info.Size),
		Open:   func(ctx context.Context) (io.ReadCloser, error) { return st.Open(ctx, info.ID) },
	}
	if as, ok := st.(assembling); ok && info.IsFinal {
		s.Assembly = as.Assembly(ctx, info.ID)
	}
	return s
}

// tusErr turns an error into the tus error a client sees: the status and
// reason of the pipeline's one table (a digest mismatch with the digest
// computed), with the cause of a server failure logged. Errors that are
// tusd's already pass as they are.
func (h *Handler) tusErr(what string, err error) tusd.Error {
	var te tusd.Error
	if errors.As(err, &te) {
		return te
	}
	code, reason := wire.Status(err)
	if level, ok := wire.Level(code); ok {
		h.log.Log(context.Background(), level, "resumable upload failed", "step", what, "status", code, "err", err)
	}
	e := tusError(tusCode(code), reason, code)
	var de *largo.DigestError
	if errors.As(err, &de) {
		e.HTTPResponse.Header["Repr-Digest"] = wire.FormatDigest(de.SHA256)
	}
	return e
}

// tusCode names a status the way tus error codes read:
// ERR_PRECONDITION_FAILED for 412.
func tusCode(status int) string {
	text := http.StatusText(status)
	if text == "" {
		text = "error"
	}
	return "ERR_" + strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_").Replace(text))
}

// tusError is an error tusd answers with its status and a one-line body.
func tusError(code, msg string, status int) tusd.Error {
	e := tusd.NewError(code, msg, status)
	e.HTTPResponse.Header = tusd.HTTPHeader{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}
	// The body is the reason alone, as every other protocol's answer is;
	// the code stays in the error, for tusd's log.
	e.HTTPResponse.Body = msg + "\n"
	return e
}

// escapePath escapes a name for a URL path, keeping its slashes.
func escapePath(name string) string { return (&url.URL{Path: name}).EscapedPath() }

type nopObserver struct{}

func (nopObserver) PendingBytes(int64) {}
func (nopObserver) UploadEnded(string) {}
