package serve

import (
	"net/http"
	"path"
	"strconv"

	"largo"
	"largo/archive"
	"largo/encode"
	"largo/limit"
	"largo/wire"
)

// rootArchiveName names the archive of the whole served folder.
const rootArchiveName = "files"

// serveArchive answers GET folder/?archive=FORMAT with the whole folder as
// one streamed archive, without precompressed sidecars (as in listings).
// Its length is computed first where the format allows, by arithmetic
// over a walk of the folder, so browsers show progress and HEAD costs the
// listings, never the data; a failure after the first byte cuts the
// connection, so the client sees a short archive, never a wrong one.
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
	top := rootArchiveName
	if name != "" {
		top = path.Base(name)
	}
	entries := archive.Walk(r.Context(), h.cfg.Store, name, top, h.cfg.Listing, func(dir string) func(largo.Info) bool { return h.sidecarFilter(r.Context(), dir) })
	return h.sendArchive(w, r, f, top, entries)
}

// zstdWriter takes a compression slot for a tar.zst sent to w, from the
// encoders of dynamic compression (so that every compressor counts
// against --compress-streams), or from the handler's own when dynamic
// compression is off; 503 with a Retry-After when all are taken.
func (h *Handler) zstdWriter(w http.ResponseWriter) (*encode.Writer, error) {
	zw, ok := h.archiveEnc.Writer(w, encode.Zstd)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(limit.RetryAfter.Seconds())))
		return nil, wire.Refuse(http.StatusServiceUnavailable, "busy: every compression slot is taken; retry later")
	}
	return zw, nil
}
