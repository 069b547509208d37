// Package resumable serves resumable uploads: the tus 1.0 protocol (core,
// creation, creation-with-upload, creation-defer-length, termination),
// implemented by tusd (github.com/tus/tusd/v2), the reference
// implementation, so that every tus client works (tus-js-client, Uppy, the
// mobile SDKs).
//
// largo adds around tusd what a file server needs and tusd leaves to its
// users:
//   - the target comes from the upload's metadata, "filename" (which may
//     hold slashes) under an optional "folder", and passes the same path
//     policy as a PUT when the upload is created, so a bad name is refused
//     before any byte is sent;
//   - the size limit (413) and the free space less the reserve (507) are
//     checked at creation, and so are the conditions (412) and, without
//     mkdir, the target's folder (409);
//   - a finished upload is committed exactly like a PUT: the store adopts
//     the staged file (largo.Adopter, a rename on disk) or, for stores
//     without that, receives a copy, then commits it atomically under the
//     conditions the creation request carried (If-None-Match: *, If-Match);
//   - when the client sent a "sha256" metadata value (64 hex digits or
//     base64), or a Repr-Digest field with sha-256 (RFC 9530) on the
//     request that completes the upload, the finished file's SHA-256 must
//     match, or the upload is discarded and that request answered 400. The
//     field lets a client hash its file while sending it and give the sum
//     with the last bytes. The hash is computed as the chunks arrive and
//     its state kept beside the upload (hash.go), so finishing does not
//     read the file again;
//   - uploads left without a byte for Config.Expiry are removed with their
//     space.
//
// The upload state is tusd's: a DataStore holding each upload's bytes and
// a FileInfo with the offset and the metadata, kept by a Staging chosen by
// what the served store is (staging.go). On a folder, DiskStaging: tusd's
// filestore in the folder's state folder, where a finished upload is
// renamed into place. On a bucket, S3Staging: tusd's S3 store, in the
// bucket's state folder, so that every instance serving the bucket sees
// every upload and a client may resume through any of them; a finished
// upload, completed there as an object, is copied into place by the
// bucket itself. tusd's S3 store cuts a PATCH body into parts on local
// disk before sending them (see S3Staging for the bound). Uploads are
// locked against concurrent PATCHes within one server only (tusd has no
// lock that lives in a bucket): two PATCHes to one upload at once through
// two servers could interleave their parts. tus clients send one PATCH at
// a time and resume only after the previous one failed, and a server ends
// a PATCH as soon as its client's connection ends.
//
// That state is not tied to the tus wire protocol: tusd's own handler
// already speaks the IETF resumable-upload draft over the same DataStore
// (its EnableExperimentalProtocol), and the finishing, checking and expiry
// here work on FileInfo alone. A second protocol is therefore a second
// front end over the same DataStore and the same finish hook, with no
// change to the state or to how uploads are committed.
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
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"

	"largo"
)

// Metadata keys read from an upload.
const (
	KeyFilename = "filename"
	KeyFolder   = "folder"
	KeySHA256   = "sha256"
	// keyIfNoneMatch and keyIfMatch hold the creation request's
	// conditions until the upload finishes.
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

// Config configures a Handler. Store, BasePath and either Staging or Dir
// are required.
type Config struct {
	// Store receives finished uploads. It must implement largo.Creator; a
	// store that implements largo.Adopter takes the staged bytes without
	// passing them through largo.
	Store largo.Store
	// Staging keeps the unfinished uploads; nil means DiskStaging(Dir,
	// Staged).
	Staging Staging
	// Dir is the folder of the upload state, as an operating-system path,
	// when Staging is nil.
	Dir string
	// Staged is the same folder as a store name under largo.StateDir, for
	// largo.Adopter, when Staging is nil.
	Staged string
	// BasePath is the URL path the handler is mounted at, with its
	// trailing slash.
	BasePath string
	// Policy checks a target name that passed largo.ParseName; nil allows
	// every name.
	Policy func(name string) error
	// MaxSize is the largest upload in bytes; zero means no limit.
	MaxSize int64
	// Reserve is the free space uploads must leave on the store.
	Reserve int64
	// NoMkdir refuses uploads into folders that do not exist.
	NoMkdir bool
	// Expiry is how long an unfinished upload may go without a byte before
	// it is removed; zero means DefaultExpiry.
	Expiry time.Duration
	// IdleTimeout cuts a client that sends no bytes for this long; zero
	// means tusd's default (a minute).
	IdleTimeout time.Duration
	// Logger receives commits, rejections and expiries; nil discards them.
	Logger *slog.Logger
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Handler serves resumable uploads. Create one with New, and run Expire
// (or Run) to remove abandoned uploads.
type Handler struct {
	cfg   Config
	log   *slog.Logger
	obs   Observer
	tus   http.Handler
	store *dataStore

	mu     sync.Mutex
	active map[string]int // uploads with a chunk being written
}

// New returns a Handler for cfg, creating cfg.Dir if needed and counting
// the bytes of the uploads already there as pending.
func New(cfg Config) (*Handler, error) {
	if _, ok := cfg.Store.(largo.Creator); !ok {
		return nil, fmt.Errorf("resumable uploads: %w", largo.ErrUnsupported)
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Policy == nil {
		cfg.Policy = func(string) error { return nil }
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, active: map[string]int{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	if cfg.Staging == nil {
		st, err := DiskStaging(cfg.Dir, cfg.Staged)
		if err != nil {
			return nil, err
		}
		cfg.Staging = st
		h.cfg.Staging = st
	}
	h.store = &dataStore{st: cfg.Staging, h: h}
	composer := tusd.NewStoreComposer()
	composer.UseCore(h.store)
	composer.UseTerminater(h.store)
	composer.UseLengthDeferrer(h.store)
	memorylocker.New().UseIn(composer)
	cors := tusd.DefaultCorsConfig
	cors.ExposeHeaders += ", ETag, Repr-Digest, Content-Location"
	tcfg := tusd.Config{
		Cors:                      &cors,
		StoreComposer:             composer,
		BasePath:                  cfg.BasePath,
		MaxSize:                   cfg.MaxSize,
		DisableDownload:           true,
		DisableConcatenation:      true,
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
// read is refused before any byte of the body is.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := reprDigest(r.Header); err != nil {
		w.Header().Set("Tus-Resumable", "1.0.0")
		http.Error(w, "invalid Repr-Digest: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.tus.ServeHTTP(w, r)
}

// reprDigest returns the sha-256 of a request's Repr-Digest field, or nil.
func reprDigest(hdr http.Header) ([]byte, error) {
	v := hdr.Values("Repr-Digest")
	if len(v) == 0 {
		return nil, nil
	}
	return largo.ParseDigest(strings.Join(v, ","))
}

// target is what an upload's metadata says of where it goes and how.
type target struct {
	name string
	cond largo.Condition
	sum  []byte // nil: no digest given
}

// parseTarget reads and checks an upload's metadata.
func (h *Handler) parseTarget(meta tusd.MetaData) (target, error) {
	var t target
	filename := meta[KeyFilename]
	if filename == "" {
		return t, tusError("ERR_FILENAME_REQUIRED", "the filename metadata is required", http.StatusBadRequest)
	}
	name, err := largo.ParseName("/" + largo.Join(strings.Trim(meta[KeyFolder], "/"), filename))
	if err != nil || name == "" {
		return t, tusError("ERR_INVALID_NAME", "invalid filename or folder", http.StatusBadRequest)
	}
	if err := h.cfg.Policy(name); errors.Is(err, largo.ErrInvalidName) {
		return t, tusError("ERR_INVALID_NAME", "invalid filename or folder", http.StatusBadRequest)
	} else if err != nil {
		return t, tusError("ERR_NAME_FORBIDDEN", "hidden or reserved name: not writable", http.StatusForbidden)
	}
	t.name = name
	if v := meta[KeySHA256]; v != "" {
		if t.sum = parseSHA256(v); t.sum == nil {
			return t, tusError("ERR_INVALID_SHA256", "sha256 metadata must be 64 hex digits or base64 of 32 bytes", http.StatusBadRequest)
		}
	}
	t.cond = largo.Condition{IfNoneMatch: meta[keyIfNoneMatch] == "*", IfMatch: meta[keyIfMatch]}
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

// preCreate checks a new upload before tusd stores anything of it: the
// name, the conditions (kept in the metadata for the finish), the target's
// folder, and the size against the free space.
func (h *Handler) preCreate(ev tusd.HookEvent) (tusd.HTTPResponse, tusd.FileInfoChanges, error) {
	var none tusd.FileInfoChanges
	meta := make(tusd.MetaData, len(ev.Upload.MetaData)+2)
	for k, v := range ev.Upload.MetaData {
		if k != keyIfNoneMatch && k != keyIfMatch {
			meta[k] = v
		}
	}
	hdr := http.Header(ev.HTTPRequest.Header)
	if v := strings.TrimSpace(hdr.Get("If-None-Match")); v != "" {
		if v != "*" {
			return tusd.HTTPResponse{}, none, tusError("ERR_CONDITION", "only If-None-Match: * is supported", http.StatusBadRequest)
		}
		meta[keyIfNoneMatch] = "*"
	}
	if v := strings.TrimSpace(hdr.Get("If-Match")); v != "" {
		meta[keyIfMatch] = v
	}
	t, err := h.parseTarget(meta)
	if err != nil {
		return tusd.HTTPResponse{}, none, err
	}
	if cw, ok := h.cfg.Store.(conditionalWriter); ok && t.cond != (largo.Condition{}) && !cw.ConditionalWrites() {
		return tusd.HTTPResponse{}, none, errCondUnsupported
	}
	ctx := ev.Context
	in, err := h.cfg.Store.Stat(ctx, t.name)
	exists := err == nil
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return tusd.HTTPResponse{}, none, h.internal("stat", err)
	}
	if exists && in.IsDir {
		return tusd.HTTPResponse{}, none, tusError("ERR_IS_FOLDER", "the target is a folder", http.StatusConflict)
	}
	if err := t.cond.Check(t.name, in, exists); err != nil {
		return tusd.HTTPResponse{}, none, tusError("ERR_PRECONDITION", "precondition failed", http.StatusPreconditionFailed)
	}
	if err := h.checkFolder(ctx, t.name); err != nil {
		return tusd.HTTPResponse{}, none, err
	}
	if !ev.Upload.SizeIsDeferred {
		if err := h.checkSpace(ctx, t.name, ev.Upload.Size); err != nil {
			return tusd.HTTPResponse{}, none, err
		}
	}
	return tusd.HTTPResponse{}, tusd.FileInfoChanges{MetaData: meta}, nil
}

// checkFolder refuses, at creation, a target whose folder is a file, or
// is missing under NoMkdir.
func (h *Handler) checkFolder(ctx context.Context, name string) error {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return nil
	}
	in, err := h.cfg.Store.Stat(ctx, name[:i])
	switch {
	case err == nil && !in.IsDir:
		return tusError("ERR_PARENT_NOT_FOLDER", "a parent is a file, not a folder", http.StatusConflict)
	case err != nil && h.cfg.NoMkdir:
		return tusError("ERR_MISSING_FOLDER", "folder does not exist", http.StatusConflict)
	}
	return nil
}

// checkSpace refuses an upload larger than the free space less the
// reserve.
func (h *Handler) checkSpace(ctx context.Context, name string, size int64) error {
	sr, ok := h.cfg.Store.(largo.SpaceReporter)
	if !ok {
		return nil
	}
	free, err := sr.Free(ctx, name)
	if errors.Is(err, largo.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return h.internal("free space", err)
	}
	if size > free-h.cfg.Reserve {
		return tusError("ERR_INSUFFICIENT_STORAGE", "insufficient storage", http.StatusInsufficientStorage)
	}
	return nil
}

// finish commits a finished upload like a PUT: checked against its
// digest, moved into place under its conditions. Whatever the result, the
// upload's state is gone afterwards.
func (h *Handler) finish(ev tusd.HookEvent) (tusd.HTTPResponse, error) {
	info := ev.Upload
	ctx := context.WithoutCancel(ev.Context)
	defer h.store.remove(ctx, info.ID)
	h.obs.PendingBytes(-info.Size)
	t, err := h.parseTarget(info.MetaData)
	if err != nil {
		h.obs.UploadEnded("rejected")
		return tusd.HTTPResponse{}, err
	}
	u, err := h.stage(ctx, t.name, t.cond, info)
	if err != nil {
		h.obs.UploadEnded("error")
		return tusd.HTTPResponse{}, h.internal("finish", err)
	}
	defer u.Abort()
	sum := u.SHA256()
	digest := largo.FormatDigest(sum[:])
	given, _ := reprDigest(http.Header(ev.HTTPRequest.Header)) // read before the body
	if t.sum != nil && string(t.sum) != string(sum[:]) || given != nil && string(given) != string(sum[:]) {
		h.log.Warn("resumable upload discarded: digest mismatch", "id", info.ID, "name", t.name, "computed", hex.EncodeToString(sum[:]))
		h.obs.UploadEnded("rejected")
		e := tusError("ERR_DIGEST_MISMATCH", "digest mismatch: computed "+digest, http.StatusBadRequest)
		e.HTTPResponse.Header["Repr-Digest"] = digest
		return tusd.HTTPResponse{}, e
	}
	in, created, err := u.Commit(ctx, t.cond)
	switch {
	case errors.Is(err, largo.ErrPrecondition):
		h.obs.UploadEnded("rejected")
		return tusd.HTTPResponse{}, tusError("ERR_PRECONDITION", "precondition failed", http.StatusPreconditionFailed)
	case errors.Is(err, largo.ErrNotFound), errors.Is(err, largo.ErrNotDir), errors.Is(err, largo.ErrIsDir):
		h.obs.UploadEnded("rejected")
		return tusd.HTTPResponse{}, tusError("ERR_TARGET_CONFLICT", "the target's folder is missing or a file", http.StatusConflict)
	case errors.Is(err, largo.ErrNoSpace):
		h.obs.UploadEnded("error")
		return tusd.HTTPResponse{}, tusError("ERR_INSUFFICIENT_STORAGE", "insufficient storage", http.StatusInsufficientStorage)
	case errors.Is(err, largo.ErrUnsupported) && t.cond != (largo.Condition{}):
		h.obs.UploadEnded("rejected")
		return tusd.HTTPResponse{}, errCondUnsupported
	case err != nil:
		h.obs.UploadEnded("error")
		return tusd.HTTPResponse{}, h.internal("commit", err)
	}
	h.obs.UploadEnded("complete")
	h.log.Info("resumable upload stored", "id", info.ID, "name", t.name, "size", in.Size, "created", created)
	return tusd.HTTPResponse{Header: tusd.HTTPHeader{
		"ETag":             in.ETag,
		"Repr-Digest":      digest,
		"Content-Location": "/" + escapePath(t.name),
	}}, nil
}

// stage turns a finished upload's bytes into a largo.Upload to name, to be
// committed under cond: adopted where they are when the store can,
// copied otherwise.
func (h *Handler) stage(ctx context.Context, name string, cond largo.Condition, info tusd.FileInfo) (largo.Upload, error) {
	st := h.cfg.Staging
	opt := largo.CreateOptions{Size: info.Size, NoMkdir: h.cfg.NoMkdir, StagedSHA256: h.store.finishedSum(ctx, info.ID, info.Size), Condition: cond}
	if a, ok := h.cfg.Store.(largo.Adopter); ok && st.Staged(info.ID) != "" {
		return a.Adopt(ctx, name, st.Staged(info.ID), opt)
	}
	opt.StagedSHA256 = nil
	u, err := h.cfg.Store.(largo.Creator).Create(ctx, name, opt)
	if err != nil {
		return nil, err
	}
	f, err := st.Open(ctx, info.ID)
	if err == nil {
		_, err = io.Copy(u, f)
		f.Close()
	}
	if err != nil {
		u.Abort()
		return nil, err
	}
	return u, nil
}

// conditionalWriter is a store that tells whether it applies conditions
// to writes: an object store, whose server may not.
type conditionalWriter interface{ ConditionalWrites() bool }

// errCondUnsupported refuses a condition the store cannot apply.
var errCondUnsupported = tusError("ERR_CONDITION_UNSUPPORTED", "not supported: this store cannot apply If-None-Match or If-Match to a write atomically", http.StatusNotImplemented)

// internal logs the cause of a failure and returns the error a client
// sees, which names no path.
func (h *Handler) internal(what string, err error) error {
	h.log.Error("resumable upload failed", "step", what, "err", err)
	return tusError("ERR_INTERNAL_SERVER_ERROR", "internal error", http.StatusInternalServerError)
}

// tusError is an error tusd answers with its status and a one-line body.
func tusError(code, msg string, status int) tusd.Error {
	e := tusd.NewError(code, msg, status)
	e.HTTPResponse.Header = tusd.HTTPHeader{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}
	return e
}

// escapePath escapes a name for a URL path, keeping its slashes.
func escapePath(name string) string { return (&url.URL{Path: name}).EscapedPath() }

type nopObserver struct{}

func (nopObserver) PendingBytes(int64) {}
func (nopObserver) UploadEnded(string) {}
