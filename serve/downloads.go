package serve

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"largo"
	"largo/links"
	"largo/transfer"
	"largo/wire"
)

// A file link with a download limit (links.Link.MaxDownloads) counts the
// bytes of the file it sends (package links: a download is a file's
// worth of bytes, so that a resumed or segmented download counts once);
// once it gave them all, it answers 410 Gone. Such a link always sends
// the file's own bytes, never a compressed form, so that what it counts
// is the file.

var errNoCount = wire.Refuse(http.StatusServiceUnavailable, "this server cannot count the downloads of this share link")

// countedDownload serves f through the link l, whose downloads are
// counted.
func (h *Handler) countedDownload(w http.ResponseWriter, r *http.Request, name string, f largo.File, l *links.Link) error {
	ls := h.gate.Links()
	if ls == nil {
		return errNoCount
	}
	in := f.Info()
	want := rangeLength(r.Header.Get("Range"), in.Size)
	if r.Method == http.MethodHead {
		want = 0
	}
	done, err := ls.Begin(r.Context(), l, in.Size, want)
	switch {
	case errors.Is(err, links.ErrUsedUp):
		return wire.Refuse(http.StatusGone, err.Error())
	case errors.Is(err, links.ErrInFlight):
		return wire.Refuse(http.StatusTooManyRequests, err.Error())
	case err != nil:
		return err
	}
	tw, _ := w.(*transfer.Response)
	var before int64
	if tw != nil {
		before = tw.Written()
	}
	r.Header.Del("Accept-Encoding")
	err = h.serveContent(w, r, name, f)
	var sent int64
	complete := false
	if tw != nil && r.Method == http.MethodGet {
		sent = tw.Written() - before
		complete = err == nil && tw.Err() == nil && tw.Status() == http.StatusOK
	}
	if cerr := done(r.Context(), sent, complete); cerr != nil {
		h.log.Error("counting a share link's download", "link", l.ID, "err", cerr)
	}
	return err
}

// rangeLength returns the bytes a Range header asks of a file of size
// bytes: size for none, or for one it cannot read (the whole file may be
// sent).
func rangeLength(rg string, size int64) int64 {
	spec, ok := strings.CutPrefix(rg, "bytes=")
	if !ok {
		return size
	}
	var total int64
	for _, part := range strings.Split(spec, ",") {
		first, last, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return size
		}
		switch {
		case first == "":
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 {
				return size
			}
			total += min(n, size)
		default:
			a, err := strconv.ParseInt(first, 10, 64)
			if err != nil || a < 0 {
				return size
			}
			b := size - 1
			if last != "" {
				if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
					return size
				}
				b = min(b, size-1)
			}
			if a < size {
				total += b - a + 1
			}
		}
		if total >= size {
			return size
		}
	}
	return total
}
