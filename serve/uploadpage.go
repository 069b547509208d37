package serve

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/links"
	"largo/ui"
)

// A browser that asks for the page of a folder its visitor may put files
// in and not see gets the upload page (ui.UploadPage) instead of a bare
// refusal: the holder of a drop box at its link's URL, a user (or an
// anonymous visitor) whom the rules let write in a folder and not list
// it. The page is offered where the gate would take a file there (the
// same Check as a form's), and only for a folder that is there: a name
// that is not answers as it would have. It shows nothing of the folder's
// files. Its uploads go through tus (at the link's URL for a drop box:
// dropupload.go) and, without JavaScript, through a form posted to the
// folder, which a browser is answered with the same page, listing the
// files stored. A client that does not ask for HTML (curl, the JSON
// listing, an archive) gets the refusal as before.

// uploadsOnly reports whether a GET of the folder name that the store
// refused with err is to be answered with the upload page.
func (h *Handler) uploadsOnly(r *http.Request, name string, err error) bool {
	refused := errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized)
	if h.cfg.Writes == nil || !refused || !acceptsHTML(r) || wantsJSON(r) || r.URL.Query().Has("archive") {
		return false
	}
	ctx := r.Context()
	if h.gate.Check(ctx, auth.Write, largo.Join(name, gate.NewName), false) != nil {
		return false
	}
	in, err := h.cfg.Store.Stat(ctx, name)
	return err == nil && in.IsDir
}

// uploadPage answers the upload page of the folder name with code,
// listing the files a form just stored (none for a GET).
func (h *Handler) uploadPage(w http.ResponseWriter, r *http.Request, name string, code int, stored []Stored) error {
	ctx := r.Context()
	p := ui.UploadPage{MaxSize: h.cfg.Writes.MaxSize(), Nonce: ui.Nonce()}
	p.Blind = h.gate.Check(ctx, auth.List, name, false) != nil
	var up *ui.Upload
	if h.cfg.Resumable != nil {
		up = &ui.Upload{Endpoint: ResumablePrefix}
	}
	if v := viewOf(r); v != nil && v.Link.Kind == links.Drop {
		l := v.Link
		// Nothing says where the link's folder is: its uploads are read
		// within it.
		p.Heading, p.Link, p.CreateOnly = "Send files", true, true
		p.Expires, p.FileTTL = l.Expires, time.Duration(l.FileTTL)*time.Second
		if most := h.gate.MaxUpload(ctx); most > 0 && (p.MaxSize == 0 || most < p.MaxSize) {
			p.MaxSize = most
		}
		p.SentKey = "link " + l.ID
		if up != nil {
			up = &ui.Upload{Endpoint: v.Base + dropUploads, Heading: "Files to send", Scope: p.SentKey, FilesOnly: true, CreateOnly: true}
		}
	} else {
		p.Folder = name
		p.Heading = "Upload to /"
		if name != "" {
			p.Heading += largo.EscapeName(name) + "/"
		}
		if h.cfg.Page != nil {
			f := ui.Folder{Name: name, Upload: up}
			h.cfg.Page.Controls(r, &f)
			p.User, p.ByToken, p.May, p.SignIn, p.SignOut = f.User, f.ByToken, f.May, f.SignIn, f.SignOut
		}
		p.SentKey = "user " + principal(r).UserName() + " /" + name
	}
	p.Upload = up
	for _, s := range stored {
		p.Received = append(p.Received, ui.Received{Name: s.Name, Size: s.Size, SHA256: s.SHA256})
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", ui.CSP(p.Nonce))
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Vary", "Accept")
	w.WriteHeader(code)
	if r.Method == http.MethodHead {
		return nil
	}
	bw := bufio.NewWriter(w)
	if err := h.ui.UploadPage(bw, p); err != nil {
		return err
	}
	return bw.Flush()
}

// acceptsHTML reports whether the client asked for an HTML page, as a
// browser does when it opens a URL.
func acceptsHTML(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(mt) == "text/html" {
			return true
		}
	}
	return false
}
