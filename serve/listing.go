package serve

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"largo"
	"largo/archive"
	"largo/auth"
	"largo/encode"
	"largo/ui"
)

// Entry is one item of a folder listing, as the JSON listing shows it.
type Entry struct {
	Name     string    `json:"name"`
	Dir      bool      `json:"dir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified,omitzero"` // absent for folders of object stores
	ETag     string    `json:"etag,omitempty"`
}

// Listing is a folder's JSON listing.
type Listing struct {
	// Path is the folder's URL path, with its trailing slash.
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
}

// list answers a folder: JSON for clients that ask for it (an Accept
// header naming application/json, or ?format=json), HTML otherwise.
// Folders come first, then files, each by name.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, name string) error {
	var infos []largo.Info
	for in, err := range h.readable(r).List(r.Context(), name) {
		if err != nil {
			return err
		}
		infos = append(infos, in)
	}
	entries := []Entry{}
	for _, in := range hideSidecars(infos) {
		entries = append(entries, Entry{Name: in.Name, Dir: in.IsDir, Size: in.Size, Modified: in.ModTime.UTC(), ETag: in.ETag})
	}
	slices.SortFunc(entries, func(a, b Entry) int {
		if a.Dir != b.Dir {
			if a.Dir {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	l := Listing{Path: "/" + name + "/", Entries: entries}
	if name == "" {
		l.Path = "/"
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Vary", "Accept")
	if wantsJSON(r) {
		hdr.Set("Content-Type", "application/json")
		if r.Method == http.MethodHead {
			return nil
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	nonce := ui.Nonce()
	hdr.Set("Content-Security-Policy", ui.CSP(nonce))
	hdr.Set("Referrer-Policy", "same-origin")
	if r.Method == http.MethodHead {
		return nil
	}
	page := h.folderPage(r, name, entries)
	page.Nonce = nonce
	return h.ui.Folder(w, page)
}

// folderPage is what the HTML page of a folder shows.
func (h *Handler) folderPage(r *http.Request, name string, entries []Entry) ui.Folder {
	f := ui.Folder{Name: name, View: ui.ParseView(r.URL.Query()), Entries: make([]ui.Entry, len(entries))}
	for i, e := range entries {
		f.Entries[i] = ui.Entry{Name: e.Name, Dir: e.Dir, Size: e.Size, Modified: e.Modified}
	}
	for _, format := range archive.Formats {
		f.Archives = append(f.Archives, string(format))
	}
	if h.cfg.Writes != nil && h.cfg.Resumable != nil && h.may(r, largo.Join(name, "x"), auth.Write) == nil {
		f.Upload = &ui.Upload{Endpoint: ResumablePrefix}
	}
	f.User, f.May, f.SignIn = h.signedIn(r, name)
	if f.User != "" && h.cfg.ShareKey != nil && h.may(r, name, auth.Read|auth.List) == nil {
		f.Share = &ui.Share{Endpoint: SharePath, Write: f.Upload != nil}
	}
	return f
}

// signedIn is what a page says of its requester: who they are and what
// they may do on name, or, for an anonymous visitor of a server with
// users, the link that signs in and comes back to name's folder. A share
// link's visitor gets neither.
func (h *Handler) signedIn(r *http.Request, name string) (user string, may []string, signIn string) {
	id := who(r)
	switch {
	case id.share != nil || h.cfg.Access == nil:
	case id.user != "":
		if p := h.cfg.Access.Policy().Allowed(id.user, name); p != 0 {
			may = strings.Split(p.String(), ",")
		}
		return id.user, may, ""
	case h.cfg.Access.Policy().Users() > 0:
		back := "/"
		if name != "" {
			back += name + "/"
		}
		return "", nil, "/?login=" + url.QueryEscape(back)
	}
	return "", nil, ""
}

// hideSidecars returns the entries of a folder without the precompressed
// sidecars: NAME.zst, NAME.br or NAME.gz is a sidecar when NAME is a file
// in the same folder that the compression policy would send it for. A
// lone backup.tar.gz, or one beside a folder named backup.tar, stays. A
// file whose type is only known from its first bytes (no extension) may be
// text, so its sidecars are hidden too.
func hideSidecars(infos []largo.Info) []largo.Info {
	files := make(map[string]largo.Info, len(infos))
	for _, in := range infos {
		if !in.IsDir {
			files[in.Name] = in
		}
	}
	out := infos[:0]
	for _, in := range infos {
		if !in.IsDir {
			if base, _, ok := encode.SidecarBase(in.Name); ok {
				if orig, ok := files[base]; ok && orig.Size >= encode.MinSize && sidecarType(contentType(orig)) {
					continue
				}
			}
		}
		out = append(out, in)
	}
	return out
}

func sidecarType(ct string) bool { return ct == "" || encode.Compressible(ct) }

// wantsJSON reports whether the client asked for the JSON listing.
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "json"
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(mt) == "application/json" {
			return true
		}
	}
	return false
}
