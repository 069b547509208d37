package serve

import (
	"mime"
	"net/http"
	"path"

	"largo/archive"
	"largo/ingest"
)

// rootArchiveName names the archive of the whole served folder.
const rootArchiveName = "files"

// serveArchive answers GET folder/?archive=FORMAT with the whole folder as
// one streamed archive, without precompressed sidecars (as in listings). Its length is computed first where the format
// allows, so browsers show progress; a failure after the first byte cuts
// the connection, so the client sees a short archive, never a wrong one.
func (h *Handler) serveArchive(w http.ResponseWriter, r *http.Request, name, format string) error {
	f, err := archive.ParseFormat(format)
	if err != nil {
		return ingest.Refuse(http.StatusBadRequest, err.Error())
	}
	top := rootArchiveName
	if name != "" {
		top = path.Base(name)
	}
	store := h.readable(r)
	entries := archive.Walk(r.Context(), store, name, top, hideSidecars)
	size, err := archive.Size(f, entries)
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", f.ContentType())
	hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": top + f.Ext()}))
	hdr.Set("Cache-Control", "no-store")
	if size >= 0 {
		hdr.Set("Content-Length", itoa(size))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	return archive.Write(r.Context(), w, f, entries, store, size)
}
