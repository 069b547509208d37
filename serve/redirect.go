package serve

import (
	"errors"
	"net/http"
	"time"

	"largo"
)

// presignTTL is how long the URL of a redirected download reads its
// file: time enough for a client to follow the redirect, little enough
// that a URL passed on soon stops working. A download begun within it runs
// to its end.
const presignTTL = 5 * time.Minute

// redirect answers a GET of the file name with 307 to a presigned URL of
// the store, which sends the bytes itself, when the access rules say so
// for the requester (redirect = "presigned": gate.Gate.Redirected); done
// reports whether it did. A HEAD is answered by largo: a presigned URL
// reads with the one method it was signed for, and a HEAD sends no
// bytes. Such a download passes none of largo's bandwidth caps, download
// counts or byte counts. A store that hands out no URLs (a folder) serves
// the file, and the log says why.
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, name string) (done bool, err error) {
	if r.Method != http.MethodGet || !h.gate.Redirected(r.Context(), name) {
		return false, nil
	}
	err = largo.ErrUnsupported
	var u string
	if p, ok := h.cfg.Store.(largo.Presigner); ok { // the gate's: always
		u, err = p.Presign(r.Context(), name, presignTTL)
	}
	if errors.Is(err, largo.ErrUnsupported) {
		h.log.Warn("a rule redirects downloads to presigned URLs, which this store does not give: served by largo", "path", r.URL.Path)
		return false, nil
	}
	if err != nil {
		return true, err
	}
	// The URL is the requester's, and short-lived: no cache keeps it.
	w.Header().Set("Cache-Control", "private, no-store")
	http.Redirect(w, r, u, http.StatusTemporaryRedirect)
	return true, nil
}
