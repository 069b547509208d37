package serve

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"largo"
	"largo/archive"
	"largo/auth"
	"largo/gate"
	"largo/limit"
	"largo/listing"
	"largo/ui"
	"largo/wire"
)

// Entry is one item of a folder listing, as the JSON listing shows it.
type Entry struct {
	Name     string    `json:"name"`
	Dir      bool      `json:"dir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified,omitzero"` // absent for folders of object stores
	ETag     string    `json:"etag,omitempty"`
	// SHA256 is the file's digest in hexadecimal, when one is recorded
	// for its version (package digests).
	SHA256 string `json:"sha256,omitempty"`
	// Expires is when the file will be removed, when an access file's
	// [[expire]] table or a drop box's file TTL says (package expiry).
	Expires time.Time `json:"expires,omitzero"`
}

// Listing is a folder's JSON listing.
type Listing struct {
	// Path is the folder's URL path, with its trailing slash.
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
}

// list answers a folder: JSON for clients that ask for it (an Accept
// header naming application/json, or ?format=json), HTML otherwise.
//
// A listing is complete and sorted however large the folder: package
// listing sorts it within a fixed memory per request and a budget shared
// by all (spilling sorted runs to disk past them), and it is written as
// it comes out of the sort, never collected. The JSON listing is in one
// order, folders first, then files, each by name byte by byte; the page
// in the order and with the filter its query asks for (package ui), which
// takes a second sort. A listing that cannot get its first share of the
// budget is answered 503 with a Retry-After. HEAD lists nothing beyond
// checking that the folder can be read.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, name string) error {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Vary", "Accept")
	asJSON := wantsJSON(r)
	nonce := ui.Nonce()
	if asJSON {
		hdr.Set("Content-Type", "application/json")
	} else {
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Content-Security-Policy", ui.CSP(nonce))
		hdr.Set("Referrer-Policy", "same-origin")
	}
	store := h.cfg.Store
	if r.Method == http.MethodHead {
		var err error
		for _, err = range store.List(r.Context(), name) {
			break // the first entry, or the error that stops the listing
		}
		return err
	}
	sorted, err := h.listingFor(r).List(r.Context(), store, name, listing.DirsFirst, nil)
	if err != nil {
		return busy(w, err)
	}
	defer sorted.Close()
	bw := bufio.NewWriterSize(w, 32<<10)
	if asJSON {
		path := "/" + name + "/"
		if name == "" {
			path = "/"
		}
		digest := func(in *largo.Info) string { return h.listDigest(r.Context(), name, in) }
		if sorted.Len() > maxListedDigests {
			digest = nil
		}
		if err := writeListing(bw, path, sorted.All(), h.sidecarFilter(r.Context(), name), digest, h.expiresIn(name)); err != nil {
			return err
		}
		return bw.Flush()
	}
	view := ui.ParseView(r.URL.Query())
	match, hide := view.Matcher(), h.sidecarFilter(r.Context(), name)
	total := 0
	page, err := sorted.Resort(viewOrder(view), func(in largo.Info) bool {
		if !hide(in) {
			return false
		}
		total++
		return match(in.Name)
	})
	if err != nil {
		return busy(w, err)
	}
	defer page.Close()
	expires := h.expiresIn(name)
	rows := func(yield func(ui.Entry, error) bool) {
		for in, err := range page.All() {
			e := ui.Entry{Name: in.Name, Dir: in.IsDir, Size: in.Size, Modified: in.ModTime, ETag: in.ETag}
			if expires != nil && err == nil {
				e.Expires = expires(&in)
			}
			if !yield(e, err) {
				return
			}
		}
	}
	fp := h.folderPage(r, name)
	fp.Nonce = nonce
	if err := h.ui.FolderRows(bw, fp, total, rows); err != nil {
		return err
	}
	return bw.Flush()
}

// expiresIn returns what tells when each file of the folder dir expires,
// or nil when nothing does.
func (h *Handler) expiresIn(dir string) func(*largo.Info) time.Time {
	if h.cfg.Expiry == nil {
		return nil
	}
	return func(in *largo.Info) time.Time {
		at, _ := h.cfg.Expiry.Expires(largo.Join(dir, in.Name), *in)
		return at
	}
}

// listingFor returns the listings' bounds for r: what its listings,
// archives and SHA256SUMS take from the budget counts against the shares
// of r's client (gate.ClientKeys).
func (h *Handler) listingFor(r *http.Request) listing.Config {
	c := h.cfg.Listing
	c.Client = gate.ClientKeys(r.Context(), r.RemoteAddr)
	return c
}

// busy turns a listing refused for want of memory into a 503 with a
// Retry-After; other errors pass.
func busy(w http.ResponseWriter, err error) error {
	if !errors.Is(err, listing.ErrBusy) {
		return err
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(limit.RetryAfter.Seconds())))
	return wire.Refuse(http.StatusServiceUnavailable, "busy: too many large listings at once; retry later")
}

// viewOrder is the order of a page's view, over listing items.
func viewOrder(v ui.View) listing.Compare {
	return func(a, b *listing.Item) int {
		return v.Compare(ui.Entry{Name: a.Name, Dir: a.Dir, Size: a.Size, Modified: a.ModTime},
			ui.Entry{Name: b.Name, Dir: b.Dir, Size: b.Size, Modified: b.ModTime})
	}
}

// folderPage is what the HTML page of a folder shows besides its rows:
// its controls, each shown where the gate would let its request through:
// the upload area, and what the page's API offers (Config.Page).
func (h *Handler) folderPage(r *http.Request, name string) ui.Folder {
	f := ui.Folder{Name: name, View: ui.ParseView(r.URL.Query())}
	if v := viewOf(r); v != nil {
		f.Root = v.Root // nothing above the link's folder is reachable
	}
	for _, format := range archive.Formats {
		f.Archives = append(f.Archives, string(format))
	}
	ctx := r.Context()
	if h.cfg.Writes != nil && h.cfg.Resumable != nil && h.gate.Check(ctx, auth.Write, largo.Join(name, gate.NewName), false) == nil {
		f.Upload = &ui.Upload{Endpoint: ResumablePrefix}
	}
	if h.cfg.Page != nil {
		h.cfg.Page.Controls(r, &f)
	}
	return f
}

// sidecarFilter returns the test of which entries of the folder dir
// listings and archives show: all but the precompressed sidecars that
// stand for a file beside them (sidecar.Policy.Shows).
func (h *Handler) sidecarFilter(ctx context.Context, dir string) func(largo.Info) bool {
	return h.sidecars.Shows(ctx, dir, h.log)
}

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
