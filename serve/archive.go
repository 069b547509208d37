package serve

import (
	"io"
	"iter"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"largo"
	"largo/archive"
	"largo/encode"
	"largo/limit"
	"largo/wire"
)

// serveArchive answers GET folder/?archive=FORMAT with the whole folder as
// one streamed archive, without precompressed sidecars (as in listings),
// through Config.Archives.
//
// The walks list each folder through the listing budget (503 with a
// Retry-After when it has nothing left), and a tar.zst takes one of the
// compression slots every compressed response shares (503 when none is
// free, or when compression is off).
func (h *Handler) serveArchive(w http.ResponseWriter, r *http.Request, name, format string) error {
	f, err := archive.ParseFormat(format)
	if err != nil {
		return wire.Refuse(http.StatusBadRequest, err.Error())
	}
	top := archive.Top(name)
	entries := archive.Walk(r.Context(), h.cfg.Store, name, top, h.listingFor(r), func(dir string) func(largo.Info) bool { return h.sidecarFilter(r.Context(), dir) })
	return h.cfg.Archives.Serve(w, r, h.cfg.Store, f, top, entries)
}

// Archives answers folders, or some entries of a folder (the page's
// selections, package pageapi), as one archive. Make one with
// NewArchives, and give the same one to every front end that sends
// archives, so that their tar.zst archives take the same compression
// slots. It is safe for concurrent use.
type Archives struct {
	tempDir string
	crc32   archive.CRC32Func
	enc     *encode.Encoders
}

// NewArchives returns the Archives that spill a zip's central directory
// to tempDir ("" means os.TempDir()), and compress tar.zst archives
// with enc: the encoders of dynamic compression, so that every
// compressor counts against the same slots; nil means encoders of its
// own, with the default bound. crc32 tells the CRC-32 kept for a file's
// version, if any, so that a zip can answer ranges (a resumed download)
// and send its files by sendfile; nil: a zip computes the CRC-32s as the
// bytes pass and is always sent whole.
func NewArchives(tempDir string, crc32 archive.CRC32Func, enc *encode.Encoders) *Archives {
	if enc == nil {
		enc, _ = encode.NewEncoders(encode.Config{}) // the defaults are valid
	}
	return &Archives{tempDir: tempDir, crc32: crc32, enc: enc}
}

// Serve answers entries, read through store, as one archive in format f,
// named top (archive.Top).
//
// First a walk that reads no file gives its length (so that a browser
// shows progress) and its ETag, a hash of what the bytes depend on: the
// entries' headers and the files' ETags. Then the conditions: If-Match
// that names another ETag is a 412, If-None-Match that names this one a
// 304; and a Range (one range, or several served as the one that covers
// them) is answered 206 where the archive allows it, unless If-Range
// names another ETag. A tar always allows it; a zip when the CRC-32 of
// every file is kept (NewArchives' crc32), since a range that skips a
// file's bytes cannot compute it; a tar.zst, compressed, never: it is
// sent whole, with Accept-Ranges: none. Then the archive, streamed, from
// a second walk: a folder that changed in between (a file's ETag, a name,
// a size) cuts the connection before the last byte, so a client never
// holds a complete answer that mixes two versions. Its length is computed
// where the format allows, by arithmetic over the walk, so HEAD costs the
// listings, never the data.
func (a *Archives) Serve(w http.ResponseWriter, r *http.Request, store largo.Store, f archive.Format, top string, entries iter.Seq2[archive.Entry, error]) error {
	opt := archive.Options{TempDir: a.tempDir, CRC32: a.crc32}
	rangeHdr := r.Header.Get("Range")
	measure := opt
	if rangeHdr == "" {
		measure.CRC32 = nil // only a range needs to know them all
	}
	p, err := archive.Measure(r.Context(), f, entries, measure)
	if err != nil {
		return busy(w, err)
	}
	hdr := w.Header()
	hdr.Set("ETag", p.ETag)
	hdr.Set("Cache-Control", "no-store")
	ranges := p.Ranges(0) && (f == archive.Tar || opt.CRC32 != nil)
	if ranges {
		hdr.Set("Accept-Ranges", "bytes")
	} else {
		hdr.Set("Accept-Ranges", "none")
	}
	if im := r.Header.Get("If-Match"); im != "" && !etagListMatches(im, p.ETag, true) {
		return wire.Refuse(http.StatusPreconditionFailed, "If-Match: the archive is no longer that version (the folder changed)")
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListMatches(inm, p.ETag, false) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	start, n, status := int64(0), p.Size, http.StatusOK
	if rangeHdr != "" && ranges && ifRangeHolds(r.Header.Get("If-Range"), p.ETag) {
		from, to, ok, unsatisfiable := archiveRange(rangeHdr, p.Size)
		switch {
		case unsatisfiable:
			// Written here: the error path drops Content-Range.
			hdr.Set("Content-Range", "bytes */"+itoa(p.Size))
			hdr.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			io.WriteString(w, "range not satisfiable: the archive has "+itoa(p.Size)+" bytes\n")
			return nil
		case ok && p.Format == archive.Zip && !p.Ranges(p.Size-1):
			// A CRC-32 is missing: every range would be answered whole
			// but the first few, which would only mislead a client that
			// splits the archive into ranges.
			hdr.Set("Accept-Ranges", "none")
		case ok:
			start, n, status = from, to-from, http.StatusPartialContent
			hdr.Set("Content-Range", "bytes "+itoa(from)+"-"+itoa(to-1)+"/"+itoa(p.Size))
		}
	}
	if f == archive.TarZst && r.Method != http.MethodHead {
		zw, err := a.zstdWriter(w)
		if err != nil {
			return err
		}
		defer zw.Abandon() // nothing, once the archive closed it
		// A tar.zst has no length to hold it to: archive.Write sends it
		// to w itself, the writer this compressor was made for.
		opt.Compress = func(io.Writer) (io.WriteCloser, func(), error) { return zw, zw.Abandon, nil }
	}
	hdr.Set("Content-Type", f.ContentType())
	hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": top + f.Ext()}))
	if n >= 0 {
		hdr.Set("Content-Length", itoa(n))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return nil
	}
	if status == http.StatusPartialContent {
		return archive.WriteRange(r.Context(), w, p, entries, store, start, n, opt)
	}
	return archive.Write(r.Context(), w, p, entries, store, opt)
}

// archiveRange reads a Range header against an archive of size bytes and
// returns the one span [from, to) to send: several ranges are served as
// the span that covers them all, as RFC 9110 lets a server coalesce
// them. ok is false when the header is to be ignored (another unit, a
// malformed range, more than maxRanges), unsatisfiable true when no range
// overlaps the archive.
func archiveRange(v string, size int64) (from, to int64, ok, unsatisfiable bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Count(spec, ",") >= maxRanges {
		return 0, 0, false, false
	}
	from, to = -1, -1
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		first, last, found := strings.Cut(part, "-")
		if !found {
			return 0, 0, false, false
		}
		var s, e int64 // [s, e)
		if first == "" {
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 {
				return 0, 0, false, false
			}
			s, e = max(size-n, 0), size
		} else {
			var err error
			if s, err = strconv.ParseInt(first, 10, 64); err != nil || s < 0 {
				return 0, 0, false, false
			}
			e = size
			if last != "" {
				l, err := strconv.ParseInt(last, 10, 64)
				if err != nil || l < s {
					return 0, 0, false, false
				}
				e = min(l+1, size)
			}
		}
		if s >= e { // past the end, or an empty suffix
			continue
		}
		if from < 0 || s < from {
			from = s
		}
		to = max(to, e)
	}
	if from < 0 {
		return 0, 0, false, true
	}
	return from, to, true, false
}

// ifRangeHolds reports whether a Range may be answered under the
// If-Range value v (none, or an ETag equal, by the strong comparison, to
// etag). A date never holds: an archive has no modification time.
func ifRangeHolds(v, etag string) bool {
	v = strings.TrimSpace(v)
	return v == "" || !strings.HasPrefix(etag, "W/") && v == etag
}

// etagListMatches reports whether the If-Match or If-None-Match value v
// ("*" or a list of entity tags) names etag, by the strong comparison
// (both strong and equal) or the weak one (equal once W/ is set aside).
func etagListMatches(v, etag string, strong bool) bool {
	if strings.TrimSpace(v) == "*" {
		return true
	}
	if strong && strings.HasPrefix(etag, "W/") {
		return false
	}
	own := strings.TrimPrefix(etag, "W/")
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		weak := strings.HasPrefix(t, "W/")
		if weak && strong {
			continue
		}
		if strings.TrimPrefix(t, "W/") == own {
			return true
		}
	}
	return false
}

// zstdWriter takes a compression slot for a tar.zst sent to w, from the
// encoders of dynamic compression (so that every compressor counts
// against --compress-streams), or from the Archives' own when dynamic
// compression is off; 503 with a Retry-After when all are taken.
func (a *Archives) zstdWriter(w http.ResponseWriter) (*encode.Writer, error) {
	zw, ok := a.enc.Writer(w, encode.Zstd)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(limit.RetryAfter.Seconds())))
		return nil, wire.Refuse(http.StatusServiceUnavailable, "busy: every compression slot is taken; retry later")
	}
	return zw, nil
}
