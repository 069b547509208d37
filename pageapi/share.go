package pageapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/links"
	"largo/wire"
)

// SharePath is where a signed-in user asks for a share link: POST with
// the form fields (URL-encoded or multipart) path, expires (a duration
// such as 24h, at most maxShareLife), write (a drop box), password
// (optional, at least links.MinPassword characters), max_upload (a
// drop box's largest file, such as 100MB) and max_rate (the link's
// bandwidth cap in bytes per second each way, shared by every transfer
// through it, such as 5MB; the server's --rate-per-link still governs
// when lower), file_ttl (a drop box: how long each file that lands
// through it is kept, such as 7d) and max_downloads (a file link: how
// many complete downloads it gives). The answer is the link, as
// LinksPath lists it.
const SharePath = prefix + "share"

// LinksPath is where a signed-in user manages the links they made: GET
// lists them (JSON, newest first), POST LinksPath+ID with the form field
// expires (a duration from now, at most maxShareLife) extends one, DELETE
// LinksPath+ID revokes one.
const LinksPath = prefix + "links/"

// maxShareLife bounds how long a link made through the page may last.
const maxShareLife = 90 * 24 * time.Hour

// maxShareForm bounds the body of a form that makes or changes a link.
const maxShareForm = 8 << 10

// LinkInfo is a share link as the page sees it.
type LinkInfo struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Kind      string    `json:"kind"`
	Path      string    `json:"path"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	Expired   bool      `json:"expired,omitempty"`
	Password  bool      `json:"password,omitempty"`
	MaxUpload int64     `json:"max_upload,omitempty"`
	MaxRate   int64     `json:"max_rate,omitempty"`
	// FileTTL is a drop box's time to live of the files it receives
	// (largo.FormatAge: "7d", "36h").
	FileTTL string `json:"file_ttl,omitempty"`
	// MaxDownloads is a file link's download limit, and Downloads the
	// downloads used of it.
	MaxDownloads int64 `json:"max_downloads,omitempty"`
	Downloads    int64 `json:"downloads,omitempty"`
}

// linkInfo describes the link l for the page.
func (a *API) linkInfo(ctx context.Context, l *links.Link) (LinkInfo, error) {
	ls := a.gate.Links()
	token, err := ls.Token(ctx, l)
	if err != nil {
		return LinkInfo{}, err
	}
	li := LinkInfo{
		ID: l.ID, URL: l.URLPath(token), Kind: string(l.Kind), Path: "/" + l.Path,
		Created: l.Created, Expires: l.Expires, Expired: !a.cfg.Now().Before(l.Expires),
		Password: l.Password != "", MaxUpload: l.MaxUpload, MaxRate: l.MaxRate,
		MaxDownloads: l.MaxDownloads,
	}
	if l.FileTTL > 0 {
		li.FileTTL = largo.FormatAge(time.Duration(l.FileTTL) * time.Second)
	}
	if l.MaxDownloads > 0 {
		if c, err := ls.Downloads(ctx, l.ID); err == nil {
			li.Downloads = c.Used
		}
	}
	return li, nil
}

// linkLimits reads the form's file_ttl and max_downloads into l, whose
// Kind is known.
func linkLimits(r *http.Request, l *links.Link) error {
	if v := r.PostForm.Get("file_ttl"); v != "" {
		ttl, err := largo.ParseAge(v)
		if err != nil || ttl < time.Second {
			return wire.Refuse(http.StatusBadRequest, "file_ttl: a time such as 7d or 36h")
		}
		if l.Kind != links.Drop {
			return wire.Refuse(http.StatusBadRequest, "file_ttl: only a drop box receives files")
		}
		l.FileTTL = int64(ttl / time.Second)
	}
	if v := r.PostForm.Get("max_downloads"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return wire.Refuse(http.StatusBadRequest, "max_downloads: a whole number of downloads, such as 3")
		}
		if l.Kind != links.File {
			return wire.Refuse(http.StatusBadRequest, "max_downloads: only a link to a file counts downloads")
		}
		l.MaxDownloads = n
	}
	return nil
}

// errNoShares answers the routes of links on a server whose links are
// off, in the words the file tree answers a link with.
var errNoShares = wire.Refuse(http.StatusNotFound, links.ErrOff.Error())

var errSignInFirst = fmt.Errorf("share links are made by signed-in users: %w", largo.ErrUnauthorized)

// maker returns the signed-in user who manages links, after the checks
// every such request passes: links on, a user, not through a link, and
// for a change, a request from the server's own pages.
func (a *API) maker(r *http.Request, change bool) (string, error) {
	if a.gate.Links() == nil {
		return "", errNoShares
	}
	user := principal(r).UserName()
	if user == "" {
		return "", errSignInFirst
	}
	if change {
		if err := a.sameOrigin(r); err != nil {
			return "", err
		}
	}
	return user, nil
}

// parseShareForm reads a small form, URL-encoded or multipart.
func parseShareForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxShareForm)
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		err = r.ParseMultipartForm(maxShareForm)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		return wire.Refuse(http.StatusBadRequest, "bad form")
	}
	return nil
}

// shareLife reads the form's expires.
func shareLife(r *http.Request) (time.Duration, error) {
	life, err := largo.ParseAge(r.PostForm.Get("expires"))
	if err != nil || life <= 0 || life > maxShareLife {
		return 0, wire.Refuse(http.StatusBadRequest, "expires: a duration such as 7d or 24h, at most 90 days")
	}
	return life, nil
}

// newShare makes a share link for the requester, who must be signed in
// and may only share what the gate lets them do themselves: a read link
// to what they may read (and list, for a folder, and everything below
// it: a rule below that hides something from them refuses the link), a
// drop box where they may write. The link answers to them: it grants
// only what they may still do when it is used.
func (a *API) newShare(w http.ResponseWriter, r *http.Request) error {
	user, err := a.maker(r, true)
	if err != nil {
		return err
	}
	if err := parseShareForm(w, r); err != nil {
		return err
	}
	name, err := pathName(r.PostForm.Get("path"), "path")
	if err != nil {
		return err
	}
	life, err := shareLife(r)
	if err != nil {
		return err
	}
	l := links.Link{Path: name, Maker: user, Expires: a.cfg.Now().Add(life)}
	if v := r.PostForm.Get("max_upload"); v != "" {
		if l.MaxUpload, err = largo.ParseSize(v); err != nil || l.MaxUpload <= 0 {
			return wire.Refuse(http.StatusBadRequest, "max_upload: a size such as 100MB")
		}
	}
	if v := r.PostForm.Get("max_rate"); v != "" {
		if l.MaxRate, err = largo.ParseSize(v); err != nil || l.MaxRate <= 0 {
			return wire.Refuse(http.StatusBadRequest, "max_rate: bytes per second, such as 5MB")
		}
	}
	ctx := r.Context()
	in, err := a.cfg.Store.Stat(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case r.PostForm.Get("write") != "" && !in.IsDir:
		return wire.Refuse(http.StatusBadRequest, "a drop box is a folder")
	case r.PostForm.Get("write") != "":
		l.Kind = links.Drop
		err = a.gate.Check(ctx, auth.Write, largo.Join(name, gate.NewName), false)
	case !in.IsDir:
		l.Kind = links.File
		err = a.gate.Check(ctx, auth.Read, name, false)
	default:
		// The link reaches everything below the folder: the maker must
		// read and list all of it.
		l.Kind = links.Folder
		err = a.gate.Check(ctx, auth.Read|auth.List, name, true)
	}
	if errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized) {
		return wire.Refuse(http.StatusForbidden, "you may only share what you may do yourself")
	}
	if err != nil {
		return err
	}
	if l.Kind != links.Drop && l.MaxUpload != 0 {
		return wire.Refuse(http.StatusBadRequest, "max_upload: only a drop box takes uploads")
	}
	if err := linkLimits(r, &l); err != nil {
		return err
	}
	_, made, err := a.gate.Links().Make(ctx, l, r.PostForm.Get("password"))
	if errors.Is(err, links.ErrShortPassword) {
		return wire.Refuse(http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return err
	}
	li, err := a.linkInfo(ctx, &made)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, li)
}

// listLinks answers the links the requester made.
func (a *API) listLinks(w http.ResponseWriter, r *http.Request) error {
	user, err := a.maker(r, false)
	if err != nil {
		return err
	}
	list, err := a.gate.Links().List(r.Context(), user, false)
	if err != nil {
		return err
	}
	out := make([]LinkInfo, len(list))
	for i := range list {
		if out[i], err = a.linkInfo(r.Context(), &list[i]); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// changeLink extends a link the requester made.
func (a *API) changeLink(w http.ResponseWriter, r *http.Request) error {
	user, err := a.maker(r, true)
	if err != nil {
		return err
	}
	if err := parseShareForm(w, r); err != nil {
		return err
	}
	life, err := shareLife(r)
	if err != nil {
		return err
	}
	l, err := a.gate.Links().Extend(r.Context(), r.PathValue("id"), user, false, a.cfg.Now().Add(life))
	if err != nil {
		return err
	}
	li, err := a.linkInfo(r.Context(), &l)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, li)
}

// revokeLink revokes a link the requester made: 204.
func (a *API) revokeLink(w http.ResponseWriter, r *http.Request) error {
	user, err := a.maker(r, true)
	if err != nil {
		return err
	}
	if err := a.gate.Links().Revoke(r.Context(), r.PathValue("id"), user, false); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
