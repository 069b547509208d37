package serve

import (
	"errors"
	"net/http"
	"path"

	"largo"
	"largo/encode"
	"largo/ingest"
)

// remove answers DELETE: a file, or a folder when it is empty or the
// query says ?recursive=1. If-Match applies to files. 204 on success.
func (h *Handler) remove(w http.ResponseWriter, r *http.Request, name string) error {
	cond, err := ingest.Condition(r.Header)
	if err != nil {
		return err
	}
	rm, err := h.cfg.Writes.CheckRemove(name, cond)
	if err != nil {
		return err
	}
	opt := largo.RemoveOptions{Condition: cond}
	switch r.URL.Query().Get("recursive") {
	case "1", "true", "yes":
		opt.Recursive = true
	}
	in, statErr := h.cfg.Store.Stat(r.Context(), name)
	if err := rm.Remove(r.Context(), name, opt); err != nil {
		return ingest.CondErr(err, cond)
	}
	if statErr == nil && !in.IsDir {
		h.removeSidecars(r, rm, name)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeSidecars removes the precompressed sidecars of a removed file,
// which would otherwise outlive it and reappear in listings. Only types
// the policy compresses have sidecars: a lone backup.tar.gz is never
// taken for backup.tar's.
func (h *Handler) removeSidecars(r *http.Request, rm largo.Remover, name string) {
	ct := contentType(largo.Info{Name: path.Base(name)})
	if ct == "" || !encode.Compressible(ct) {
		return
	}
	for _, c := range encode.Codings {
		err := rm.Remove(r.Context(), encode.Sidecar(name, c), largo.RemoveOptions{})
		if err != nil && !errors.Is(err, largo.ErrNotFound) {
			h.log.Warn("removing a sidecar", "path", r.URL.Path, "coding", c, "err", err)
		}
	}
}
