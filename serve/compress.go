package serve

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"largo"
	"largo/encode"
)

// serveEncoded applies the compression policy to a file: it sends a fresh
// precompressed sidecar (NAME.zst, NAME.br, NAME.gz beside NAME) or a
// dynamically compressed stream when the policy says so, and returns
// done=false when the file is to be sent as it is. It sets
// "Vary: Accept-Encoding" whenever the choice depends on that header, on
// every answer for the file, identity included.
func (h *Handler) serveEncoded(w http.ResponseWriter, r *http.Request, name string, in largo.Info, ct string, f largo.File) (done bool, err error) {
	req := encode.Request{
		Accept:  encode.ParseAccept(r.Header.Values("Accept-Encoding")),
		Range:   r.Header.Get("Range") != "",
		IfRange: r.Header.Get("If-Range"),
	}
	sidecars := map[encode.Coding]largo.Info{}
	offer := encode.Offer{
		MediaType: ct,
		Size:      in.Size,
		Dynamic:   h.cfg.Compress != nil,
		Sidecar: func(c encode.Coding) (string, bool) {
			sin, ok := h.sidecar(r, name, in, c)
			if !ok {
				return "", false
			}
			sidecars[c] = sin
			return sidecarETag(sin, c), true
		},
	}
	ch := encode.Choose(req, offer)
	if ch.Vary {
		w.Header().Add("Vary", "Accept-Encoding")
	}
	switch {
	case ch.Coding == encode.Identity:
		return false, nil
	case ch.Sidecar:
		return h.serveSidecar(w, r, name, ch.Coding, sidecars[ch.Coding])
	}
	if ct == in.ContentType {
		// The type is the store's label, not the bytes': versitygw, for
		// one, calls an object it holds no type for text/plain. Bytes
		// that are not what the label says would cost an encoder and a
		// core for nothing, so they are looked at first (on a bucket, one
		// more ranged GET per compressed response) and sent as they are
		// unless they look compressible too.
		got, err := sniff(f)
		if err != nil {
			return true, err
		}
		if !encode.Compressible(got) {
			return false, nil
		}
	}
	return h.serveDynamic(w, r, in, ch.Coding, f)
}

// sidecar returns the metadata of name's sidecar in coding c, if there is
// one that may stand for the original (isSidecar).
func (h *Handler) sidecar(r *http.Request, name string, orig largo.Info, c encode.Coding) (largo.Info, bool) {
	side := encode.Sidecar(name, c)
	sin, err := h.cfg.Store.Stat(r.Context(), side)
	if err != nil {
		if !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("sidecar lookup failed", "path", r.URL.Path, "coding", string(c), "err", err)
		}
		return largo.Info{}, false
	}
	return sin, h.isSidecar(r.Context(), side, sin, orig)
}

// isSidecar reports whether the file side, described by sin, stands for
// the original orig as its encoding (sidecar.Policy.Serves).
func (h *Handler) isSidecar(ctx context.Context, side string, sin, orig largo.Info) bool {
	ok, err := h.sidecars.Serves(ctx, side, sin, orig)
	if err != nil {
		h.log.Warn("reading a sidecar's record", "name", side, "err", err)
	}
	return ok
}

// sidecarETag is the ETag of the representation a sidecar holds: strong,
// since its bytes are fixed, and distinct from the original's and from
// every other coding's, as it is derived from the sidecar's own ETag.
func sidecarETag(sin largo.Info, c encode.Coding) string {
	tag := strings.Trim(strings.TrimPrefix(sin.ETag, "W/"), `"`)
	if tag == "" {
		tag = strconv.FormatInt(sin.Size, 16) + "-" + strconv.FormatInt(sin.ModTime.UnixNano(), 16)
	}
	return `"` + tag + "-" + string(c) + `"`
}

// dynamicETag is the ETag of a dynamically compressed representation:
// weak, as the compressed bytes depend on the level and on the encoder's
// version, while the decoded content is the original's.
func dynamicETag(orig string, c encode.Coding) string {
	tag := strings.Trim(strings.TrimPrefix(orig, "W/"), `"`)
	if tag == "" {
		return ""
	}
	return `W/"` + tag + "-" + string(c) + `"`
}

// serveSidecar sends a sidecar through http.ServeContent, like any file:
// with sendfile, and with ranges on the encoded bytes. A sidecar that
// vanished or went stale since it was chosen is skipped (done=false), and
// the original is sent instead.
func (h *Handler) serveSidecar(w http.ResponseWriter, r *http.Request, name string, c encode.Coding, chosen largo.Info) (bool, error) {
	sf, err := h.reads.Open(r.Context(), encode.Sidecar(name, c))
	if err != nil {
		return false, nil
	}
	defer sf.Close()
	sin := sf.Info()
	if sin.ETag != chosen.ETag || sin.Size != chosen.Size {
		return false, nil // replaced between the look-up and the open
	}
	hdr := w.Header()
	hdr.Set("Content-Encoding", string(c))
	hdr.Set("ETag", sidecarETag(sin, c))
	// ServeContent leaves the length of an encoded body unset; this one
	// is known, and without it the body would be chunked, without sendfile.
	// ServeContent replaces it for ranges and removes it from 304s and
	// errors.
	hdr.Set("Content-Length", strconv.FormatInt(sin.Size, 10))
	h.comp.Compressed(string(c), "sidecar")
	// The representation sent is the sidecar's bytes: its own digest.
	w = h.reprDigest(w, r, encode.Sidecar(name, c), sin.ETag)
	return true, serveBody(w, r, name, sin.ModTime, sf)
}

// serveDynamic compresses the file on its way to the client, through a
// pooled encoder. When every compression slot is taken it returns
// done=false, and the file goes out uncompressed: never a queue.
func (h *Handler) serveDynamic(w http.ResponseWriter, r *http.Request, in largo.Info, c encode.Coding, f largo.File) (bool, error) {
	cw, ok := h.cfg.Compress.Start(w, c, in.Size)
	if !ok {
		h.comp.Compressed(string(c), "refused")
		return false, nil
	}
	hdr := w.Header()
	hdr.Set("Content-Encoding", string(c))
	if tag := dynamicETag(in.ETag, c); tag != "" {
		hdr.Set("ETag", tag)
	}
	// A panic below (a cut client, a bug) must not keep the slot.
	defer cw.Abandon()
	readErr := serveBody(cw, r, in.Name, in.ModTime, f)
	if err := cw.Close(); errors.Is(err, encode.ErrShortBody) || readErr != nil {
		h.log.Error("compressed file ended early; connection cut", "path", r.URL.Path, "sent", cw.In(), "size", in.Size)
		// The status line is out: cutting the connection is the only way
		// left to tell the client its copy is incomplete.
		panic(http.ErrAbortHandler)
	}
	h.comp.Compressed(string(c), "dynamic")
	return true, nil
}
