package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/ingest"
)

// SharePath is where a signed-in user asks for a share link: POST with
// the form fields path, expires (a duration such as 24h, at most
// maxShareLife), write (a drop box) and password (optional). The answer
// is JSON: {"url": "/_largo/s/.../", "expires": "RFC 3339 time"}.
const SharePath = Prefix + "share"

// maxShareLife bounds how long a link made through the page may last.
const maxShareLife = 90 * 24 * time.Hour

// newShare makes a share link for the requester, who must be signed in
// and may only share what they may do themselves: a read link to what
// they may read (and list, for a folder, and everything below it: a rule
// below that hides something from them refuses the link), a drop box
// where they may write.
func (h *Handler) newShare(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.ShareKey == nil {
		return errNoShares
	}
	id := who(r)
	if id.share != nil || id.user == "" {
		return errUnauthorized
	}
	if err := h.sameOrigin(r); err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		return ingest.Refuse(http.StatusBadRequest, "bad form")
	}
	name, err := largo.ParseName("/" + strings.TrimPrefix(r.PostForm.Get("path"), "/"))
	if err != nil || largo.Reserved(name) {
		return ingest.Refuse(http.StatusBadRequest, "path: not a path this server serves")
	}
	life, err := time.ParseDuration(r.PostForm.Get("expires"))
	if err != nil || life <= 0 || life > maxShareLife {
		return ingest.Refuse(http.StatusBadRequest, "expires: a duration such as 24h, at most 90 days")
	}
	in, err := h.cfg.Store.Stat(r.Context(), name)
	if err != nil {
		return err
	}
	s := auth.Share{Path: name, Write: r.PostForm.Get("write") != "", File: !in.IsDir, Expires: h.cfg.Now().Add(life).Truncate(time.Second)}
	switch {
	case s.Write && s.File:
		return ingest.Refuse(http.StatusBadRequest, "a drop box is a folder")
	case s.Write:
		err = h.may(r, largo.Join(name, "\x00"), auth.Write)
	case s.File:
		err = h.may(r, name, auth.Read)
	default:
		// The link reaches everything below the folder, whatever the
		// rules say there: the maker must read and list all of it.
		err = h.mayBelow(r, name, auth.Read|auth.List)
	}
	if errors.Is(err, errUnauthorized) || errors.Is(err, errForbidden) {
		return ingest.Refuse(http.StatusForbidden, "you may only share what you may do yourself")
	}
	if err != nil {
		return err
	}
	token := auth.SignShare(h.cfg.ShareKey, s, r.PostForm.Get("password"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]string{"url": s.URLPath(token), "expires": s.Expires.UTC().Format(time.RFC3339)})
}
