package serve

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"largo"
)

// maxRanges bounds the ranges of one request. Beyond it the Range header is
// ignored and the whole file is sent, as RFC 9110 allows: thousands of tiny
// ranges cost far more than the file.
const maxRanges = 64

// get answers GET and HEAD for a file or a folder.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, name string) error {
	f, err := h.cfg.Store.Open(r.Context(), name)
	if errors.Is(err, largo.ErrIsDir) {
		if !strings.HasSuffix(r.URL.Path, "/") {
			redirectSlash(w, r)
			return nil
		}
		if format := r.URL.Query().Get("archive"); format != "" {
			return h.serveArchive(w, r, name, format)
		}
		return h.list(w, r, name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(r.URL.Path, "/") {
		return errors.Join(largo.ErrNotFound, errors.New("file named as a folder"))
	}
	h.serveContent(w, r, f)
	return nil
}

// serveContent sends an open file with http.ServeContent, which implements
// ranges, multipart/byteranges, If-Range and the conditional requests; it
// evaluates them against the ETag set here.
func (h *Handler) serveContent(w http.ResponseWriter, r *http.Request, f largo.File) {
	in := f.Info()
	hdr := w.Header()
	if in.ETag != "" {
		hdr.Set("ETag", in.ETag)
	}
	if ct := contentType(in); ct != "" {
		hdr.Set("Content-Type", ct)
	}
	// User content never runs script on largo's origin.
	hdr.Set("Content-Security-Policy", "sandbox")
	if rg := r.Header.Get("Range"); rg != "" && (!strings.HasPrefix(rg, "bytes=") || strings.Count(rg, ",") >= maxRanges) {
		// RFC 9110 14.2: a range unit the server does not know is ignored.
		r.Header.Del("Range")
	}
	var content io.ReadSeeker = f
	if of, ok := f.(largo.OSFile); ok {
		content = of.OSFile() // what sendfile recognises
	}
	http.ServeContent(w, r, in.Name, in.ModTime, content)
}

// redirectSlash sends a folder named without its trailing slash to its
// canonical URL, so relative links in the listing resolve.
func redirectSlash(w http.ResponseWriter, r *http.Request) {
	u := url.URL{Path: r.URL.Path + "/", RawQuery: r.URL.RawQuery}
	http.Redirect(w, r, u.EscapedPath()+querySuffix(u.RawQuery), http.StatusMovedPermanently)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func querySuffix(q string) string {
	if q == "" {
		return ""
	}
	return "?" + q
}
