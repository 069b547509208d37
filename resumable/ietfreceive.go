package resumable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/ingest"
	"largo/wire"
)

// receive appends r's body to the upload at info.Offset, as far as the
// upload may take it (its length when known, else the size limit), and
// returns its new state. The error says why it stopped early: a body
// error (see body), or the staging's (a tus error with its status).
func (x *IETF) receive(ctx context.Context, f *flight, r *http.Request, up tusd.Upload, info tusd.FileInfo) (tusd.FileInfo, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return info, nil
	}
	b := &body{r: r.Body, f: f, left: -1}
	switch m := x.h.cfg.Writes.MaxSize(); {
	case !info.SizeIsDeferred:
		b.left, b.past = info.Size-info.Offset, errPastLength
	case m > 0:
		b.left, b.past = max(m-info.Offset, 0), errPastLimit
	}
	// The chunk is admitted for what it announces (admission.go), of
	// which no more than the length declared is taken; what arrives is
	// kept even if the client leaves now.
	size := r.ContentLength
	if !info.SizeIsDeferred && size > b.left {
		size = b.left
	}
	n, err := up.WriteChunk(withChunkSize(context.WithoutCancel(ctx), size), info.Offset, b)
	info.Offset += n
	if err != nil {
		return info, err
	}
	return info, b.err
}

// errBusyIETF is the IETF protocol's answer to an append while another
// server appends to the upload: a conflict, resolved by retrieving the
// offset.
var errBusyIETF = wire.Refuse(http.StatusConflict, "another server is appending to this upload: retrieve its offset, then resume")

// conclude answers a request that sent bytes to an upload, after it
// stopped taking them (err): where the upload stands now, or, when the
// request said it carried the end and all of it is in, what the target
// resource answers once the upload is placed.
func (x *IETF) conclude(ctx context.Context, w http.ResponseWriter, r *http.Request, v version, up tusd.Upload, info tusd.FileInfo, err error, complete, creation bool) {
	hdr := w.Header()
	var moved *movedError
	if err == nil && v.completesAtLength() && !info.SizeIsDeferred && info.Offset == info.Size {
		complete = true
	}
	switch {
	case errors.Is(err, errStopped):
		// Its client gave up on it: the connection is cut, unanswered.
		panic(http.ErrAbortHandler)
	case errors.Is(err, errPastLength):
		x.discard(ctx, up, info, "bytes past its length")
		x.fail(w, r, lengthMismatch(v, "the request carries bytes past the upload's length; the upload is removed"))
		return
	case errors.Is(err, errPastLimit):
		// A body of no announced length that would take the upload
		// past the size limit: what came up to the limit is kept, as an
		// append refused for its announced length keeps the upload where
		// it was, and a quota's refusal what came before it; the upload
		// cannot grow, and its client is told where it stands.
		hdr.Set("Upload-Limit", v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry))
		hdr.Set("Upload-Offset", strconv.FormatInt(info.Offset, 10))
		v.setComplete(hdr, false)
		x.fail(w, r, fmt.Errorf("the upload would pass the size limit of %d bytes: %w", x.h.cfg.Writes.MaxSize(), largo.ErrTooLarge))
		return
	case errors.Is(err, errBusy):
		// Another server appends to it: the client retrieves the offset
		// and resumes from there once that append ends.
		hdr.Set("Upload-Offset", strconv.FormatInt(info.Offset, 10))
		v.setComplete(hdr, false)
		x.fail(w, r, errBusyIETF)
		return
	case errors.As(err, &moved):
		x.fail(w, r, offsetMismatch(v, moved.offset, info.Offset))
		return
	case err != nil:
		var te tusd.Error
		code, _ := statusOf(err)
		if !errors.As(err, &te) {
			// The client's body broke or stalled: what came is kept.
			err, code = ingest.BodyErr(err), 0
		}
		switch code {
		case http.StatusRequestEntityTooLarge:
			hdr.Set("Upload-Limit", v.limitsField(x.h.cfg.Writes.MaxSize(), x.h.cfg.Expiry))
			fallthrough
		case 0, http.StatusInsufficientStorage:
			// What came before the refusal is kept: the upload goes on
			// from there.
			hdr.Set("Upload-Offset", strconv.FormatInt(info.Offset, 10))
			v.setComplete(hdr, false)
		}
		x.fail(w, r, err)
		return
	case complete:
		x.complete(ctx, w, r, v, up, info)
		return
	}
	x.answerState(w, r, v, info, info.ID)
	if creation {
		w.WriteHeader(http.StatusCreated) // with the upload's Location
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// complete places an upload whose client said its last byte is in, and
// answers as the target resource: 201 or 204 with the file's ETag and
// digest, or the refusal of the placing. Either way the upload is
// complete, unless the failure was the server's, which a retry of the
// last request may overcome (ends).
func (x *IETF) complete(ctx context.Context, w http.ResponseWriter, r *http.Request, v version, up tusd.Upload, info tusd.FileInfo) {
	d, err := x.finish(ctx, r, v, up, info)
	if err != nil {
		var p *problem
		if !errors.As(err, &p) {
			v.setComplete(w.Header(), ends(err))
		}
		x.fail(w, r, err)
		return
	}
	x.answerDone(w, v, d, 0)
}

// finish places an upload that is complete at its offset, under its
// lock. An upload short of the length it declared can never complete: it
// is removed.
func (x *IETF) finish(ctx context.Context, r *http.Request, v version, up tusd.Upload, info tusd.FileInfo) (done, error) {
	if err := x.declare(ctx, up, &info, info.Offset); err != nil {
		x.discard(ctx, up, info, "completed short of its length")
		return done{}, lengthMismatch(v, "the upload is complete at "+strconv.FormatInt(info.Offset, 10)+
			" bytes, short of its length "+strconv.FormatInt(info.Size, 10)+"; the upload is removed")
	}
	if err := up.FinishUpload(ctx); err != nil {
		return done{}, x.h.storeErr("finish", err)
	}
	return x.h.place(ctx, info, r.Header)
}

// discard removes an upload that can never complete.
func (x *IETF) discard(ctx context.Context, up tusd.Upload, info tusd.FileInfo, why string) {
	x.h.log.Warn("resumable upload removed", "id", info.ID, "name", info.MetaData[KeyFilename], "why", why)
	if err := x.h.store.AsTerminatableUpload(up).Terminate(ctx); err != nil {
		x.h.log.Warn("removing an upload", "id", info.ID, "err", err)
	}
}
