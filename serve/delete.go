package serve

import (
	"errors"
	"net/http"
	"path"

	"largo"
	"largo/encode"
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
	h.cfg.Writes.Removed(r.Context(), name, in)
	if statErr == nil && !in.IsDir {
		h.removeSidecars(r, rm, name, in)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeSidecars removes the precompressed sidecars of a removed file
// (in, as it was), which would otherwise outlive it and reappear in
// listings. A sidecar is only what the server would have sent as the
// file's encoding: of a type the policy compresses (a lone backup.tar.gz
// is never taken for backup.tar's), and recorded and unchanged since,
// stale or not (or, with Config.AnySidecars, not older than the file):
// anything else is a file of its own, and stays. Each is removed under If-Match of the ETag it had
// when it was judged, so one replaced meanwhile stays; its record goes
// with it.
func (h *Handler) removeSidecars(r *http.Request, rm largo.Remover, name string, in largo.Info) {
	ct := contentType(largo.Info{Name: path.Base(name)})
	if ct == "" || !encode.Compressible(ct) {
		return
	}
	for _, c := range encode.Codings {
		side := encode.Sidecar(name, c)
		sin, err := h.cfg.Store.Stat(r.Context(), side)
		if err != nil || sin.ETag == "" || !h.ownSidecar(r.Context(), side, sin, in) {
			continue
		}
		err = rm.Remove(r.Context(), side, largo.RemoveOptions{Condition: largo.Condition{IfMatch: sin.ETag}})
		if err != nil && !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrPrecondition) {
			h.log.Warn("removing a sidecar", "path", r.URL.Path, "coding", c, "err", err)
		}
		if err == nil && !h.cfg.AnySidecars {
			h.forgetSidecar(r.Context(), side)
		}
	}
}
