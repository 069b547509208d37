package serve

import (
	"fmt"
	"net/http"

	"largo"
)

// remove answers DELETE: a file, or a folder when it is empty or the
// query says ?recursive=1. If-Match applies to files. 204 on success.
func (h *Handler) remove(w http.ResponseWriter, r *http.Request, name string) error {
	rm, ok := h.cfg.Store.(largo.Remover)
	if !ok {
		return fmt.Errorf("remove: %w", largo.ErrUnsupported)
	}
	cond, err := condition(r)
	if err != nil {
		return err
	}
	opt := largo.RemoveOptions{Condition: cond}
	switch r.URL.Query().Get("recursive") {
	case "1", "true", "yes":
		opt.Recursive = true
	}
	if err := rm.Remove(r.Context(), name, opt); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
