package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/ingest"
	"largo/wire"
)

// A finished upload stays on record until it expires: a client that
// missed the answer to its last PATCH (a cut connection, a server
// restart) asks HEAD, and must learn that all its bytes are in and where
// they went, not start again. The record is kept in the store's state
// area (largo.StateKeeper), under doneKey, so that every instance serving
// the store answers for it.
//
// An upload whose bytes are all staged but which was never placed (the
// server died between the last byte and the commit) is placed by the
// first HEAD or PATCH that asks for it, before any answer claims
// success: tusd itself would answer such a PATCH 204 without calling the
// finish hook.

// doneKey is the state key of a finished upload's record: its ID, or,
// for an ID too long to be a file name (an S3 upload ID can be hundreds of
// characters), the ID's SHA-256.
func doneKey(id string) string {
	if len(id) > 128 {
		sum := sha256.Sum256([]byte(id))
		id = "h" + hex.EncodeToString(sum[:])
	}
	return "tus-done/" + id
}

// done is the record of a finished upload.
type done struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	ETag    string `json:"etag"`
	Digest  string `json:"digest"`
	Created bool   `json:"created,omitempty"` // no file was there before
	Owner   string `json:"owner,omitempty"`   // keyOwner of the upload ("": an older version's)
}

// header is what a response about a finished upload carries.
func (d done) header() tusd.HTTPHeader {
	return tusd.HTTPHeader{
		"ETag":             d.ETag,
		"Repr-Digest":      d.Digest,
		"Content-Location": "/" + escapePath(d.Name),
	}
}

// loadDone returns the record of a finished upload, if there is one that
// ctx's principal reaches (owner.go): another's is none.
func (h *Handler) loadDone(ctx context.Context, id string) (done, bool) {
	d, ok := h.record(ctx, id)
	if !ok || !reaches(ctx, d.Owner) {
		return done{}, false
	}
	return d, true
}

// record returns the record of a finished upload, if there is one,
// whoever it belongs to.
func (h *Handler) record(ctx context.Context, id string) (done, bool) {
	var d done
	if h.state == nil {
		return d, false
	}
	b, err := h.state.Get(ctx, doneKey(id))
	if err != nil {
		if !errors.Is(err, largo.ErrNotFound) {
			h.log.Warn("reading a finished upload's record", "id", id, "err", err)
		}
		return d, false
	}
	return d, json.Unmarshal(b, &d) == nil
}

// place puts a finished upload in place through the write pipeline, once:
// under the upload's lock, a record found means it is placed already. It
// is placed for its owner, with the owner's rights of now, whoever sent
// its last byte (owner.go), and admitted again as a whole file (its hold
// on the quotas, and its partials', end first). The upload's staged state
// is removed afterwards, unless the failure was the server's, which a
// retry may overcome (ends). The caller holds the upload's lock.
func (h *Handler) place(ctx context.Context, info tusd.FileInfo, hdr http.Header) (done, error) {
	if d, ok := h.record(ctx, info.ID); ok {
		return d, nil
	}
	if info.IsPartial {
		return done{}, errPartialPlaced
	}
	ctx, err := asOwner(ctx, info.MetaData)
	var t ingest.Target
	if err == nil {
		t, err = parseTarget(info.MetaData)
	}
	if err == nil {
		var given []byte
		given, err = reprDigest(hdr) // checked before the body
		if t.SHA256 != nil && given != nil && string(t.SHA256) != string(given) {
			err = fmt.Errorf("sha256 metadata and Repr-Digest disagree: %w", wire.ErrBadDigest)
		} else if given != nil {
			t.SHA256 = given
		}
	}
	var res ingest.Result
	if err == nil {
		h.release(info.ID)
		h.release(info.PartialUploads...)
		res, err = h.cfg.Writes.Place(ctx, t, h.staged(ctx, info))
	}
	if err != nil {
		if ends(err) {
			h.forget(ctx, info, "rejected")
		} else {
			h.obs.UploadEnded("error")
		}
		h.log.Warn("resumable upload not stored", "id", info.ID, "name", t.Name, "err", err)
		return done{}, err
	}
	d := done{Name: t.Name, Size: res.Info.Size, ETag: res.Info.ETag, Digest: wire.FormatDigest(res.SHA256), Created: res.Created, Owner: info.MetaData[keyOwner]}
	if h.state != nil {
		b, _ := json.Marshal(d)
		if err := h.state.Put(ctx, doneKey(info.ID), b); err != nil {
			h.log.Warn("keeping a finished upload's record", "id", info.ID, "err", err)
		}
	}
	h.forget(ctx, info, "complete")
	h.log.Info("resumable upload stored", "id", info.ID, "name", t.Name, "size", res.Info.Size, "created", res.Created)
	return d, nil
}

// ends reports whether a refusal to place an upload ends it: a refusal of
// the upload itself (a 4xx) or of the room it needs (the size limit, the
// space, a quota: 413 and 507), which sending its last request again does
// not overcome, and whose staged bytes would only take the room the
// refusal says is missing. A server's other failures (a 5xx) keep the
// upload for a retry.
func ends(err error) bool {
	code, _ := statusOf(err)
	return code < 500 || code == http.StatusInsufficientStorage
}

// forget removes an ended upload's staged state (and a final's partials)
// and counts its end.
func (h *Handler) forget(ctx context.Context, info tusd.FileInfo, outcome string) {
	h.release(info.ID)
	h.release(info.PartialUploads...)
	h.store.remove(ctx, info.ID)
	if info.IsFinal {
		h.forgetParts(ctx, info)
	}
	h.obs.PendingBytes(-info.Size)
	h.obs.UploadEnded(outcome)
}

// uploadID returns the upload ID a request's path names, or "".
func (h *Handler) uploadID(p string) string {
	id, ok := strings.CutPrefix(p, h.cfg.BasePath)
	if !ok || !validID(id) {
		return ""
	}
	return id
}

// answerFinished answers a HEAD or PATCH on an upload whose bytes are all
// in: from its record, after placing it if a crash left it unplaced. It
// reports false for an upload still in progress (or unknown), which tusd
// answers.
func (h *Handler) answerFinished(w http.ResponseWriter, r *http.Request, id string) bool {
	ctx := context.WithoutCancel(r.Context())
	if h.busy(id) {
		return false // a PATCH is writing it: tusd orders the two
	}
	unlock := h.locks.Lock(id)
	defer unlock()
	d, ok := h.loadDone(ctx, id)
	if !ok {
		up, err := h.store.GetUpload(ctx, id)
		if err != nil {
			return false
		}
		info, err := up.GetInfo(ctx)
		if err != nil || info.SizeIsDeferred || info.Offset != info.Size || info.IsPartial {
			return false // a partial is tusd's to answer: its final places it
		}
		if info.IsFinal && h.store.finishedSum(ctx, id, info.Size) == nil {
			return false // a join cut short: the final request makes it again
		}
		// All the bytes are in, and nothing placed them.
		if err := up.FinishUpload(ctx); err != nil {
			h.log.Warn("finishing an upload found complete", "id", id, "err", err)
		}
		if d, err = h.place(ctx, info, r.Header); err != nil {
			h.outside(w, r)
			writeTusError(w, h.tusErr("finish", err))
			return true
		}
	}
	h.outside(w, r)
	hdr := w.Header()
	for k, v := range d.header() {
		hdr.Set(k, v)
	}
	hdr.Set("Tus-Resumable", "1.0.0")
	hdr.Set("Upload-Offset", strconv.FormatInt(d.Size, 10))
	hdr.Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		hdr.Set("Upload-Length", strconv.FormatInt(d.Size, 10))
		w.WriteHeader(http.StatusOK)
		return true
	}
	if off := r.Header.Get("Upload-Offset"); off != strconv.FormatInt(d.Size, 10) {
		writeTusError(w, tusError("ERR_UPLOAD_OFFSET_MISMATCH", "mismatched offset: the upload is complete", http.StatusConflict))
		return true
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// busy reports whether a chunk of the upload is being written.
func (h *Handler) busy(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active[id] > 0
}

// outside sets, on an answer written outside tusd, the fields tusd's own
// answers carry: the protocol's version, nosniff, and for an origin that
// may send uploads from a browser (Config.CORSOrigins) what lets its page
// read the answer.
func (h *Handler) outside(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Tus-Resumable", "1.0.0")
	hdr.Set("X-Content-Type-Options", "nosniff")
	origin := r.Header.Get("Origin")
	if h.cors.Disable || origin == "" || !h.cors.AllowOrigin.MatchString(origin) {
		return
	}
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Vary", "Origin")
	hdr.Set("Access-Control-Allow-Credentials", "true")
	hdr.Set("Access-Control-Expose-Headers", h.cors.ExposeHeaders)
}

// writeTusError answers a tus error outside tusd.
func writeTusError(w http.ResponseWriter, e tusd.Error) {
	hdr := w.Header()
	for k, v := range e.HTTPResponse.Header {
		hdr.Set(k, v)
	}
	hdr.Set("Tus-Resumable", "1.0.0")
	w.WriteHeader(e.HTTPResponse.StatusCode)
	fmt.Fprintf(w, "%s: %s\n", e.ErrorCode, e.Message)
}
