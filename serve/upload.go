package serve

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"largo"
)

// put stores the body at name: streamed through a pooled buffer into the
// store's temporary file, hashed, checked against the client's digest,
// then committed atomically under the request's condition. 201 for a new
// file, 204 for a replacement, both with the ETag and Repr-Digest.
func (h *Handler) put(w http.ResponseWriter, r *http.Request, name string) error {
	if strings.HasSuffix(r.URL.Path, "/") {
		return fmt.Errorf("%s: PUT to a folder path: %w", name, largo.ErrIsDir)
	}
	if r.Header.Get("Content-Range") != "" {
		// RFC 9110, 14.5: the body is likely a part mistaken for the whole.
		return errPartialPut
	}
	cr, cond, err := h.writeSetup(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	want, err := wantDigest(r.Header)
	if err != nil {
		return err
	}
	space, err := h.room(ctx, name, r.ContentLength)
	if err != nil {
		return err
	}
	if err := h.precheck(ctx, name, cond); err != nil {
		return err
	}
	u, err := cr.Create(ctx, name, largo.CreateOptions{Size: r.ContentLength, NoMkdir: h.cfg.NoMkdir, Condition: cond})
	if err != nil {
		return createErr(err, cond)
	}
	defer u.Abort()

	body := r.Body
	if h.cfg.MaxUpload > 0 {
		body = http.MaxBytesReader(w, body, h.cfg.MaxUpload)
	}
	if _, err := h.receive(u, body, space); err != nil {
		return err
	}
	sum := u.SHA256()
	if want != nil && string(want) != string(sum[:]) {
		w.Header().Set("Repr-Digest", largo.FormatDigest(sum[:]))
		return &detailError{err: fmt.Errorf("%s: %w", name, largo.ErrDigest), detail: "computed " + largo.FormatDigest(sum[:])}
	}
	// The body is in: finish even if the client hangs up now.
	in, created, err := u.Commit(context.WithoutCancel(ctx), cond)
	if err != nil {
		return createErr(err, cond)
	}
	hdr := w.Header()
	hdr.Set("ETag", in.ETag)
	hdr.Set("Repr-Digest", largo.FormatDigest(sum[:]))
	if created {
		hdr.Set("Location", r.URL.EscapedPath())
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}
