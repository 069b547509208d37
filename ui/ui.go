// Package ui is largo's face in a browser: the folder page, rendered on
// the server from an embedded template so that browsing, sorting and
// filtering work without JavaScript; the upload page of a folder its
// visitor may put files in and not see (a drop box's: UploadPage), a
// form without JavaScript; and the static assets that enhance them
// (a style sheet with light and dark themes, and ES modules for live
// sorting and filtering, keyboard navigation, resumable uploads over
// tus 1.0, and a file manager: selections, moves, renames, removals, new
// folders, share links, previews and a search below the folder).
// Everything is embedded in the binary and written by hand: no CDN, no
// build step.
//
// Assets are served at Base + VERSION + "/" + NAME, where VERSION is a hash
// of all the assets' contents. A page names the set it was rendered with,
// so assets are cached for a year as immutable and an upgrade never mixes
// old and new files. One version for the whole set, rather than a hash in
// each file name, keeps the modules' relative imports plain. The assets
// are read and hashed when a page or an asset is first asked for, and
// text assets compressed once, when a client that accepts gzip first asks
// for them (not when the UI is made: a server that shows no page pays
// nothing), and sent compressed to such clients.
//
// Pages carry the policy CSP returns: no inline script or style, no
// plugins, images, media, frames and connections only from largo's own
// origin, and scripts and style sheets only from the elements the page
// itself was rendered with. Every name on a page goes through
// html/template's escaping, and the page's script writes names only as
// text. A preview never makes a file part of the page: images and media
// play in the browser's own elements, text is read (its first MiB) and
// shown as text, and a file named as a PDF opens in a frame, where the
// browser's own viewer (an extension of the browser, in a process and an
// origin of its own) reads it; whatever else the server answers for it
// (a bucket's object may say it is HTML) comes under the policy every
// file is sent with, sandbox, so nothing in it runs, let alone as the
// server's origin. A frame's sandbox attribute would say the same for
// any file, but the browser then refuses to show a PDF at all.
//
// Scripts are allowed by a nonce, not by origin: 'self' would also allow
// any .js file a user uploads to the server, which then runs with the
// origin's rights wherever some page loads it. Each response gets a new
// nonce (Nonce: 128 random bits), carried by the policy and by the page's
// one script element (and its style sheet); the modules that script
// imports inherit the nonce, as module graphs do, so no 'strict-dynamic'
// is needed, and without it no script may add another. An uploaded
// /evil.js, or a script element slipped into a page, has no nonce and
// does not run. A host-source with a path (script-src
// https://HOST/_largo/ui/) would also keep uploads out, but only if the
// server knew the scheme and host name the browser sees, which a proxy in
// front of it may change, and browsers ignore a source's path once a
// request was redirected; the nonce depends on neither. The assets
// themselves are served under a path no user can write (the reserved
// prefix, see New).
//
// The page holds no credential and asks for none: a visitor signs in with
// the browser's own Basic auth (Folder.SignIn), and the browser sends that
// credential with every request, the page's uploads included, from a
// store no script can read.
//
// A UI is safe for concurrent use; its zero value is not usable: make one
// with New.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"largo"
)

// CSP returns the Content-Security-Policy of a page rendered with nonce
// (see Folder.Nonce): only the page's own elements load scripts and style
// sheets; images, audio, video and frames come from the server itself,
// for previews (a frame shows a PDF in the browser's own viewer; see the
// package's doc).
func CSP(nonce string) string {
	return "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce + "'; img-src 'self'; " +
		"media-src 'self'; frame-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// Nonce returns a new nonce for one page: 128 bits from crypto/rand, in
// URL-safe base64, never the same twice.
func Nonce() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// immutable is the Cache-Control of assets of the current version.
const immutable = "public, max-age=31536000, immutable"

//go:embed assets templates
var files embed.FS

// UI renders folder pages and serves their assets.
type UI struct {
	base string
	// set reads and hashes the assets when a page or an asset is first
	// asked for: a server that only sends files never copies them out of
	// the binary.
	set func() assetSet
	// page parses the pages' templates (the folder page's, the upload
	// page's) when a page is first shown: a server that only sends files
	// never runs the template parser.
	page func() *template.Template
}

// assetSet is the embedded assets by name, and the version that names
// them all.
type assetSet struct {
	version string
	assets  map[string]*asset
}

// asset is one embedded file, ready to send.
type asset struct {
	body  []byte
	ctype string
	etag  string
	// gzipped is body compressed, made by the first client that accepts
	// it: a gzip writer at its best level takes most of a MiB while it
	// works, which a server that never shows a page should not pay.
	gzipped func() []byte // nil when compression does not pay
}

// New returns a UI whose assets live under base, a URL path with a
// trailing slash (such as "/_largo/ui/").
func New(base string) *UI {
	u := &UI{base: base, set: sync.OnceValue(readAssets)}
	u.page = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("folder.html").Funcs(template.FuncMap{
			"asset": func(name string) string { return u.base + u.Version() + "/" + name },
		}).ParseFS(files, "templates/*.html"))
	})
	return u
}

// readAssets reads the embedded assets and hashes them into their
// version.
func readAssets() assetSet {
	set := assetSet{assets: map[string]*asset{}}
	sum := sha256.New()
	names, err := fs.Glob(files, "assets/*")
	if err != nil {
		panic(err) // a fixed pattern over embedded files
	}
	slices.Sort(names)
	for _, name := range names {
		body, err := files.ReadFile(name)
		if err != nil {
			panic(err)
		}
		name = path.Base(name)
		fmt.Fprintf(sum, "%s %d\n", name, len(body))
		sum.Write(body)
		one := sha256.Sum256(body)
		a := &asset{body: body, ctype: contentType(name), etag: `"` + hex.EncodeToString(one[:8]) + `"`}
		a.gzipped = sync.OnceValue(func() []byte { return compress(body) })
		set.assets[name] = a
	}
	set.version = hex.EncodeToString(sum.Sum(nil)[:6])
	return set
}

// Version returns the hash that names the current set of assets.
func (u *UI) Version() string { return u.set().version }

// Asset serves GET and HEAD of an asset under the base path. An asset of
// the current version is cached as immutable; one asked for under another
// version (a page from before an upgrade) is served as it is now, and
// revalidated. An unknown name is an error wrapping largo.ErrNotFound.
func (u *UI) Asset(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, u.base)
	version, name, ok2 := strings.Cut(rest, "/")
	set := u.set()
	a := set.assets[name]
	if !ok || !ok2 || a == nil {
		return fmt.Errorf("ui asset %q: %w", r.URL.Path, largo.ErrNotFound)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("Vary", "Accept-Encoding")
	if version == set.version {
		hdr.Set("Cache-Control", immutable)
	} else {
		hdr.Set("Cache-Control", "no-cache")
	}
	body, etag := a.body, a.etag
	if r.Header.Get("Range") == "" && acceptsGzip(r.Header) {
		if gz := a.gzipped(); gz != nil {
			body, etag = gz, strings.TrimSuffix(a.etag, `"`)+`-gzip"`
			hdr.Set("Content-Encoding", "gzip")
		}
	}
	hdr.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
	return nil
}

// acceptsGzip reports whether Accept-Encoding names gzip with a non-zero
// quality.
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				q := strings.ReplaceAll(params, " ", "")
				return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
			}
		}
	}
	return false
}

// compress returns body gzipped, or nil when that saves too little.
func compress(body []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(body)
	zw.Close()
	if b.Len() > len(body)*9/10 {
		return nil
	}
	return b.Bytes()
}

// contentType is the media type of an asset, by its extension.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}
