package resumable

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/ingest"
	"largo/wire"
)

// The IETF front end speaks "Resumable Uploads for HTTP"
// (draft-ietf-httpbis-resumable-upload, the successor of tus) at a file's
// own URL: a PUT to a file, or a POST to a folder, that states its
// completeness (Upload-Complete) in an interop version the front end
// speaks becomes an upload. The server answers 104 (Upload Resumption
// Supported) with the upload resource's Location and its limits, stores
// the body in the same staging as tus, and, when the request says it
// carried the whole file, places it through the same pipeline and answers
// as the PUT would have (201 or 204, ETag, Repr-Digest). A client cut off
// asks the upload resource for its offset (HEAD), appends the rest
// (PATCH), or cancels (DELETE).
//
// Uploads are tus uploads underneath: the same Staging, IDs, pending
// bytes, hash as the bytes arrive, expiry, records of finished uploads and
// placing; only the wire differs, and what marks an upload complete: the
// client's word (Upload-Complete: ?1 on the request that ends it), never
// its offset reaching a length.

// Metadata keys of an upload made by the IETF front end, the server's own
// (owner.go).
const (
	keyProtocol = "largo-protocol" // "ietf"
	keyVersion  = "largo-ietf-version"
)

// uploadMethods are the methods an upload resource answers.
const uploadMethods = "HEAD, GET, PATCH, DELETE, OPTIONS"

// IETFConfig configures the IETF front end of a Handler.
type IETFConfig struct {
	// BasePath is the URL path the upload resources are served at, with
	// its trailing slash.
	BasePath string
	// Versions are the interop versions spoken: a request in another
	// gets no 104 and is no resumable upload. Nil means DefaultVersions.
	Versions []int
}

// IETF serves the IETF resumable-upload protocol over a Handler's
// uploads: it takes the writes that ask for it (Takes, Create) and serves
// their upload resources (ServeHTTP). It is safe for concurrent use.
type IETF struct {
	h        *Handler
	base     string
	versions []int

	mu      sync.Mutex
	flights map[string]*flight // by upload ID: the newest request on it
}

// IETF returns the IETF front end over h's uploads.
func (h *Handler) IETF(cfg IETFConfig) (*IETF, error) {
	if !strings.HasPrefix(cfg.BasePath, "/") || !strings.HasSuffix(cfg.BasePath, "/") {
		return nil, fmt.Errorf("IETF uploads: base path %q must start and end with a slash", cfg.BasePath)
	}
	vs := cfg.Versions
	if vs == nil {
		vs = DefaultVersions()
	}
	for _, v := range vs {
		if v < 3 {
			return nil, fmt.Errorf("IETF uploads: interop version %d (before draft -01) is not spoken", v)
		}
	}
	return &IETF{h: h, base: cfg.BasePath, versions: slices.Clone(vs), flights: map[string]*flight{}}, nil
}

// requestVersion returns the interop version a request speaks, if it is
// one of x's.
func (x *IETF) requestVersion(r *http.Request) (version, bool) {
	n, ok := integerField(r.Header, "Upload-Draft-Interop-Version")
	if !ok || !slices.Contains(x.versions, int(n)) {
		return 0, false
	}
	return version(n), true
}

// uploadVersion returns the version to answer a request on an upload in:
// the request's, else the one it was created in.
func (x *IETF) uploadVersion(r *http.Request, info tusd.FileInfo) version {
	if v, ok := x.requestVersion(r); ok {
		return v
	}
	if n, err := strconv.Atoi(info.MetaData[keyVersion]); err == nil && n >= 3 {
		return version(n)
	}
	return latest
}

// doneVersion returns the version to answer a request on a finished
// upload in (its record keeps none): the request's, else the latest.
func (x *IETF) doneVersion(r *http.Request) version {
	if v, ok := x.requestVersion(r); ok {
		return v
	}
	return latest
}

// Takes reports whether the PUT or POST r creates a resumable upload: it
// states its completeness, in an interop version x speaks. One in another
// version is no resumable upload (and the draft forbids a 104 then). A
// completeness that is no Boolean is taken, for Create to refuse.
func (x *IETF) Takes(r *http.Request) bool {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return false
	}
	if len(r.Header.Values("Upload-Complete")) == 0 && len(r.Header.Values("Upload-Incomplete")) == 0 {
		return false
	}
	_, ok := x.requestVersion(r)
	return ok
}

// Limits returns the Upload-Limit field the write targets announce.
func (x *IETF) Limits() string {
	return latest.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry)
}

// Target returns the file a PUT to name, or a POST to the folder name,
// that Takes took will store, read as Create reads it.
func (x *IETF) Target(r *http.Request, name string) (string, error) {
	return requestTarget(r, name, tusd.MetaData{})
}

// Create serves a PUT to name, or a POST to the folder name, that Takes
// took, for the principal of r's context, who owns the upload (owner.go).
// Refusals known before the upload exists (the fields, the name, the
// conditions, the size limit, the space) are returned, for the caller to
// answer as it answers any write; from the 104 on, Create answers itself.
func (x *IETF) Create(w http.ResponseWriter, r *http.Request, name string) error {
	ctx := r.Context()
	v, _ := x.requestVersion(r)
	hdr := w.Header()
	hdr.Set("Upload-Draft-Interop-Version", v.String())
	complete, _, err := completeness(r.Header)
	if err != nil {
		return err
	}
	if err := checkClientKeys(tusd.ParseMetadataHeader(r.Header.Get("Upload-Metadata"))); err != nil {
		return err
	}
	owner, err := creator(ctx)
	if err != nil {
		return err
	}
	meta := tusd.MetaData{keyProtocol: "ietf", keyVersion: v.String(), keyOwner: owner}
	if name, err = requestTarget(r, name, meta); err != nil {
		return err
	}
	meta[KeyFilename] = name
	length, err := uploadLength(r.Header, r.ContentLength, 0, complete)
	var refused *wire.StatusError
	if errors.As(err, &refused) {
		return err
	}
	if err != nil {
		x.fail(w, r, lengthMismatch(v, err.Error()))
		return nil
	}
	t, err := x.target(r, name, length, complete, meta)
	if err != nil {
		return err
	}
	t.Protocol, t.Metadata, _ = hookFields(meta)
	if err := x.h.accept(ctx, t, meta); err != nil {
		if errors.Is(err, largo.ErrTooLarge) {
			hdr.Set("Upload-Limit", v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry))
		}
		return err
	}
	if length < 0 && r.ContentLength > 0 {
		// What its body brings is admitted again as it arrives
		// (admission.go); refused now, it is refused before the 104.
		if err := x.h.cfg.Writes.CheckChunk(ctx, name, 0, r.ContentLength); err != nil {
			if errors.Is(err, largo.ErrTooLarge) {
				hdr.Set("Upload-Limit", v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry))
			}
			return err
		}
	}
	up, err := x.h.store.NewUpload(ctx, tusd.FileInfo{Size: max(length, 0), SizeIsDeferred: length < 0, MetaData: meta})
	if err != nil {
		return plain(err)
	}
	info, err := up.GetInfo(ctx)
	if err != nil {
		return plain(err)
	}
	f, leave, err := x.enter(ctx, w, r, info.ID)
	if err != nil {
		return err
	}
	defer leave()
	hdr.Set("Location", x.base+info.ID)
	if l := v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry); l != "" {
		hdr.Set("Upload-Limit", l)
	}
	w.WriteHeader(104) // Upload Resumption Supported
	info, err = x.receive(ctx, f, r, up, info)
	x.conclude(ctx, w, r, v, up, info, err, complete, true)
	return nil
}

// target returns the write an upload asks for, and keeps in its metadata
// what the placing needs of the creation request: the conditions and the
// digest.
func (x *IETF) target(r *http.Request, name string, length int64, complete bool, meta tusd.MetaData) (ingest.Target, error) {
	t := ingest.Target{Name: name, Size: length}
	cond, err := wire.Condition(r.Header)
	if err != nil {
		return t, err
	}
	t.Cond = cond
	if cond.IfNoneMatch {
		meta[keyIfNoneMatch] = "*"
	}
	if cond.IfMatch != "" {
		meta[keyIfMatch] = cond.IfMatch
	}
	// Repr-Digest describes the whole file; Content-Digest only this
	// request's body, which is the whole file when it says it is complete.
	if complete {
		t.SHA256, err = wire.Digest(r.Header)
	} else {
		t.SHA256, err = reprDigest(r.Header)
	}
	if err != nil {
		return t, err
	}
	if t.SHA256 == nil && meta[KeySHA256] != "" {
		if t.SHA256 = parseSHA256(meta[KeySHA256]); t.SHA256 == nil {
			return t, errBadSHA256
		}
	}
	if t.SHA256 != nil {
		meta[KeySHA256] = hex.EncodeToString(t.SHA256)
	}
	return t, nil
}

// requestTarget returns the file an IETF creation request writes, named
// the protocol's way: a PUT by its URL, the file name; a POST to the
// folder name by its Content-Disposition filename (the draft's way), else
// by tus-style Upload-Metadata (tus-js-client's way, whose sha256 it also
// keeps in meta). Either way the name is targetName's.
func requestTarget(r *http.Request, name string, meta tusd.MetaData) (string, error) {
	if r.Method != http.MethodPost {
		return targetName("", name)
	}
	var rel string
	if _, params, err := mime.ParseMediaType(r.Header.Get("Content-Disposition")); err == nil {
		rel = params["filename"]
	}
	if rel == "" {
		m := tusd.ParseMetadataHeader(r.Header.Get("Upload-Metadata"))
		rel = metadataName(m)
		if m[KeySHA256] != "" {
			meta[KeySHA256] = m[KeySHA256]
		}
	}
	if rel == "" {
		return "", errNoFilename
	}
	return targetName(name, rel)
}

// uploadLength returns the upload's length as a request states it (-1:
// not stated): Upload-Length, or, on a request that completes the upload,
// its offset and Content-Length (size, -1 for unknown). When both are
// given they must agree. An Upload-Length that is no length is refused
// (lengthField).
func uploadLength(hdr http.Header, size, offset int64, complete bool) (int64, error) {
	length, err := lengthField(hdr)
	if err != nil {
		return -1, err
	}
	if complete && size >= 0 {
		if length >= 0 && length != offset+size {
			return -1, fmt.Errorf("Upload-Length %d, but this last request ends at %d", length, offset+size)
		}
		length = offset + size
	}
	return length, nil
}

// ServeHTTP serves the upload resources: HEAD or GET for the offset,
// PATCH to append, DELETE to cancel.
func (x *IETF) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strings.CutPrefix(r.URL.Path, x.base)
	if !validID(id) {
		x.fail(w, r, errNoUpload)
		return
	}
	var err error
	switch r.Method {
	case http.MethodHead, http.MethodGet:
		err = x.offset(w, r, id)
	case http.MethodPatch:
		err = x.append(w, r, id)
	case http.MethodDelete:
		err = x.cancel(w, r, id)
	case http.MethodOptions:
		hdr := w.Header()
		hdr.Set("Allow", uploadMethods)
		hdr.Set("Accept-Patch", "application/partial-upload")
		hdr.Set("Upload-Limit", x.Limits())
		w.WriteHeader(http.StatusNoContent)
	default:
		err = errUploadMethod
	}
	if err != nil {
		x.fail(w, r, err)
	}
}

// load returns an upload of the IETF front end.
func (x *IETF) load(ctx context.Context, id string) (tusd.Upload, tusd.FileInfo, error) {
	var info tusd.FileInfo
	up, err := x.h.store.GetUpload(ctx, id)
	if errors.Is(err, tusd.ErrNotFound) {
		return nil, info, errNoUpload
	}
	if err != nil {
		return nil, info, err
	}
	if info, err = up.GetInfo(ctx); err != nil {
		return nil, info, err
	}
	if info.MetaData[keyProtocol] != "ietf" {
		return nil, info, errNoUpload // a tus upload: tus answers for it
	}
	return up, info, nil
}

// offset answers an offset retrieval, after the request in flight on the
// upload, if any, has stopped and stored what it received.
func (x *IETF) offset(w http.ResponseWriter, r *http.Request, id string) error {
	ctx := context.WithoutCancel(r.Context())
	if err := x.h.reach(ctx, id); err != nil {
		return err
	}
	_, leave, err := x.enter(r.Context(), w, r, id)
	if err != nil {
		return err
	}
	defer leave()
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	if d, ok := x.h.loadDone(ctx, id); ok {
		x.answerDone(w, x.doneVersion(r), d, http.StatusNoContent)
		return nil
	}
	up, info, err := x.load(ctx, id)
	if err != nil {
		return err
	}
	v := x.uploadVersion(r, info)
	if v <= 6 && (r.Header.Get("Upload-Offset") != "" || r.Header.Get("Upload-Length") != "" ||
		r.Header.Get("Upload-Complete") != "" || r.Header.Get("Upload-Incomplete") != "") {
		return errStateFields // as drafts -01 to -05 ask
	}
	if v.completesAtLength() && !info.SizeIsDeferred && info.Offset == info.Size {
		// Complete, though a server that stopped before placing it
		// left it here: placed before any answer says so.
		d, err := x.finish(ctx, r, v, up, info)
		if err != nil {
			return err
		}
		x.answerDone(w, v, d, http.StatusNoContent)
		return nil
	}
	x.answerState(w, r, v, info, id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// answerState sets the fields that say where an unfinished upload stands.
func (x *IETF) answerState(w http.ResponseWriter, r *http.Request, v version, info tusd.FileInfo, id string) {
	hdr := w.Header()
	if _, ok := x.requestVersion(r); ok {
		hdr.Set("Upload-Draft-Interop-Version", v.String())
	}
	hdr.Set("Upload-Offset", strconv.FormatInt(info.Offset, 10))
	v.setComplete(hdr, false)
	if !info.SizeIsDeferred {
		hdr.Set("Upload-Length", strconv.FormatInt(info.Size, 10))
	}
	if l := v.limitsField(x.h.cfg.Writes.MaxSize(), x.lifetime(r.Context(), id)); l != "" {
		hdr.Set("Upload-Limit", l)
	}
	hdr.Set("Cache-Control", "no-store")
}

// lifetime returns how long an upload has left before it expires: the
// expiry less the time since its last byte, where the staging tells it
// (the expiry itself where it does not, which the first sweep after the
// expiry may outlast by a quarter).
func (x *IETF) lifetime(ctx context.Context, id string) time.Duration {
	age := x.h.cfg.Expiry
	if lw, ok := x.h.cfg.Staging.(lastWriter); ok {
		if last, err := lw.LastWrite(ctx, id); err == nil {
			age -= max(x.h.cfg.Now().Sub(last), 0)
		}
	}
	return max(age, 0)
}

// answerDone answers about a finished upload from its record, as the
// target resource did when it placed it: the placed file's ETag, digest
// and location, and the upload complete at its length. code is the status,
// or 0 for the target's own (201 for a new file, 204).
func (x *IETF) answerDone(w http.ResponseWriter, v version, d done, code int) {
	hdr := w.Header()
	for k, val := range d.header() {
		hdr.Set(k, val)
	}
	hdr.Del("Upload-Limit")
	hdr.Del("Location")
	v.setComplete(hdr, true)
	hdr.Set("Upload-Offset", strconv.FormatInt(d.Size, 10))
	hdr.Set("Upload-Length", strconv.FormatInt(d.Size, 10))
	hdr.Set("Cache-Control", "no-store")
	if code == 0 {
		code = http.StatusNoContent
		if d.Created {
			code = http.StatusCreated
			hdr.Set("Location", "/"+escapePath(d.Name))
		}
	}
	w.WriteHeader(code)
}

// append appends a PATCH's body to an upload.
func (x *IETF) append(w http.ResponseWriter, r *http.Request, id string) error {
	ctx := context.WithoutCancel(r.Context())
	if err := x.h.reach(ctx, id); err != nil {
		return err
	}
	f, leave, err := x.enter(r.Context(), w, r, id)
	if err != nil {
		return err
	}
	defer leave()
	if f.stopped.Load() {
		panic(http.ErrAbortHandler) // a newer request came before this one began
	}
	if d, ok := x.h.loadDone(ctx, id); ok {
		return x.appendDone(w, r, d)
	}
	up, info, err := x.load(ctx, id)
	if err != nil {
		return err
	}
	v := x.uploadVersion(r, info)
	if _, ok := x.requestVersion(r); ok {
		w.Header().Set("Upload-Draft-Interop-Version", v.String())
	}
	if v.typedAppends() {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/partial-upload" {
			w.Header().Set("Accept-Patch", "application/partial-upload")
			return errAppendType
		}
	}
	offset, ok := integerField(r.Header, "Upload-Offset")
	if !ok {
		return errNoOffset
	}
	if offset != info.Offset {
		return offsetMismatch(v, info.Offset, offset)
	}
	complete, err := v.complete(r.Header)
	if err != nil {
		return err
	}
	length, err := uploadLength(r.Header, r.ContentLength, offset, complete)
	if err == nil && length >= 0 {
		err = x.declare(ctx, up, &info, length)
	}
	if err != nil {
		var p *problem
		var refused *wire.StatusError
		if errors.As(err, &p) || errors.As(err, &refused) || errors.Is(err, largo.ErrTooLarge) || errors.Is(err, largo.ErrNoSpace) {
			if errors.Is(err, largo.ErrTooLarge) {
				w.Header().Set("Upload-Limit", v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry))
			}
			return err
		}
		return lengthMismatch(v, err.Error())
	}
	// The body is admitted as it arrives (admission.go): one whose
	// Content-Length the limits cannot take is refused before it is read.
	info, err = x.receive(ctx, f, r, up, info)
	x.conclude(ctx, w, r, v, up, info, err, complete, false)
	return nil
}

// declare records a length a request states for an upload: it must agree
// with the length already known, hold the bytes already in, and fit the
// size limit, the space and the quotas (the bytes still to come).
func (x *IETF) declare(ctx context.Context, up tusd.Upload, info *tusd.FileInfo, length int64) error {
	switch {
	case !info.SizeIsDeferred && length != info.Size:
		return fmt.Errorf("the upload's length is %d, not %d", info.Size, length)
	case !info.SizeIsDeferred:
		return nil
	case length < info.Offset:
		return fmt.Errorf("length %d, but %d bytes are in already", length, info.Offset)
	}
	if length > info.Offset {
		if err := x.h.cfg.Writes.CheckChunk(ctx, info.MetaData[KeyFilename], info.Offset, length-info.Offset); err != nil {
			return err
		}
	}
	if err := x.h.store.AsLengthDeclarableUpload(up).DeclareLength(ctx, length); err != nil {
		return plain(err)
	}
	info.Size, info.SizeIsDeferred = length, false
	return nil
}

// appendDone answers an append to an upload that is complete: an empty
// one that completes it at its length again (its client missed the
// answer) gets the answer again; bytes are refused.
func (x *IETF) appendDone(w http.ResponseWriter, r *http.Request, d done) error {
	v := x.doneVersion(r)
	offset, ok := integerField(r.Header, "Upload-Offset")
	complete, err := v.complete(r.Header)
	switch {
	case !ok:
		return errNoOffset
	case err != nil:
		return err
	case offset != d.Size:
		p := offsetMismatch(v, d.Size, offset)
		v.setComplete(p.hdr, true)
		return p
	case r.ContentLength != 0 || !complete:
		return completedAppend(v)
	}
	x.answerDone(w, v, d, 0)
	return nil
}

// cancel removes an upload, after the request in flight on it, if any,
// has stopped.
func (x *IETF) cancel(w http.ResponseWriter, r *http.Request, id string) error {
	ctx := context.WithoutCancel(r.Context())
	if err := x.h.reach(ctx, id); err != nil {
		return err
	}
	_, leave, err := x.enter(r.Context(), w, r, id)
	if err != nil {
		return err
	}
	defer leave()
	if _, ok := x.h.loadDone(ctx, id); ok {
		if err := x.h.state.Delete(ctx, doneKey(id)); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	up, _, err := x.load(ctx, id)
	if err != nil {
		return err
	}
	if err := x.h.store.AsTerminatableUpload(up).Terminate(ctx); err != nil {
		if errors.Is(err, errBusy) {
			return errBusyIETF
		}
		return err
	}
	x.h.log.Info("resumable upload cancelled", "id", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
