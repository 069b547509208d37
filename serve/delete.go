package serve

import (
	"net/http"

	"largo"
	"largo/ingest"
	"largo/wire"
)

// remove answers DELETE: a file, or a folder when it is empty or the
// query says ?recursive=1 or WebDAV is on (RFC 4918, 9.6.1: a DELETE of
// a collection removes all it holds). If-Match applies to files; a lock
// held by another client refuses it (423); a folder removed with all it
// holds needs the permission to delete everything below it (403 when a
// rule below takes it away). 204 on success.
func (h *Handler) remove(w http.ResponseWriter, r *http.Request, name string) error {
	cond, err := wire.Condition(r.Header)
	if err != nil {
		return err
	}
	if since, ok := wire.UnmodifiedSince(r.Header); ok {
		if cond, err = h.cfg.Writes.Unmodified(r.Context(), name, since, cond); err != nil {
			return err
		}
	}
	rm, err := h.cfg.Writes.CheckRemove(r.Context(), name, cond, wire.LockTokens(r.Header))
	if err != nil {
		return err
	}
	opt := largo.RemoveOptions{Condition: cond}
	switch r.URL.Query().Get("recursive") {
	case "1", "true", "yes":
		opt.Recursive = true
	}
	if h.cfg.DAV != nil {
		opt.Recursive = true
	}
	in, statErr := h.cfg.Store.Stat(r.Context(), name)
	if statErr == nil && !in.IsDir {
		opt.Recursive = false // a file: nothing below it for the rules to weigh
	}
	if err := rm.Remove(r.Context(), name, opt); err != nil {
		return ingest.CondErr(err, cond)
	}
	if statErr != nil {
		in = largo.Info{}
	}
	h.cfg.Writes.Removed(r.Context(), name, in) // its sidecars go too (ingest.Derived)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
