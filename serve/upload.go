package serve

import (
	"context"
	"net/http"

	"largo/ingest"
	"largo/wire"
)

// put stores the body at name through the write pipeline: admitted before
// the body is read, streamed and hashed, checked against the client's
// digest, then committed atomically under the request's condition. 201
// for a new file, 204 for a replacement, both with the ETag and
// Repr-Digest.
func (h *Handler) put(w http.ResponseWriter, r *http.Request, name string) error {
	if r.Header.Get("Content-Range") != "" {
		// RFC 9110, 14.5: the body is likely a part mistaken for the whole.
		return errPartialPut
	}
	cond, err := wire.Condition(r.Header)
	if err != nil {
		return err
	}
	if since, ok := wire.UnmodifiedSince(r.Header); ok {
		if cond, err = h.cfg.Writes.Unmodified(r.Context(), name, since, cond); err != nil {
			return err
		}
	}
	want, err := wire.Digest(r.Header)
	if err != nil {
		return err
	}
	ctx := r.Context()
	wr, err := h.cfg.Writes.Begin(ctx, ingest.Target{Name: name, Size: r.ContentLength, Cond: cond, SHA256: want, Tokens: wire.LockTokens(r.Header), Protocol: "put"})
	if err != nil {
		return err
	}
	defer wr.Abort()
	if _, err := wr.ReadFrom(r.Body); err != nil {
		return err
	}
	// The body is in: finish even if the client hangs up now.
	res, err := wr.Commit(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("ETag", res.Info.ETag)
	hdr.Set("Repr-Digest", wire.FormatDigest(res.SHA256))
	if res.Created {
		hdr.Set("Location", r.URL.EscapedPath())
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}
