// Package dav is largo's WebDAV front end: the DAV methods (PROPFIND,
// PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK) at the files' own URLs,
// spoken by golang.org/x/net/webdav over an adapter on a largo.Store. The
// library owns the protocol and its XML; this package owns how it meets
// largo:
//
//   - the adapter (fs.go, file.go) reads through the store as the
//     requester may see it, and writes only through the write pipeline
//     (package ingest): a COPY into a file is a write committed when the
//     copy ends, streamed through the pipeline's buffers into the store's
//     staging and renamed into place; a MOVE is the store's rename where
//     it has one (a folder), else a copy then a removal (a bucket: not
//     atomic);
//   - locks (locks.go) are records in the store's state area (a
//     record.Table), taken where none is and refreshed, released or taken
//     over only as they were read (record.Table.Update), so that every
//     instance serving one bucket sees the same locks and of two taking
//     one expired lock exactly one wins; Sweep removes the expired ones.
//     Through ingest.Guard they refuse writes of every protocol (PUT,
//     forms, tus, IETF uploads, DELETE) that do not present the lock's
//     token (423).
//     A lock is its taker's (the principal package gate puts in the
//     request's context): another's token counts as none, and refreshes
//     or removes nothing (403). A PROPFIND shows the locks that apply
//     (DAV:lockdiscovery, lockdiscovery.go);
//   - the library answers the errors of a change with statuses of its own
//     (500, 403); ServeDAV answers them from the pipeline's table instead
//     (answer, in this file), as a PUT would be;
//   - dead properties (props.go) are records in the state area too, one
//     per file, moved with it by any move (ingest.Guard's Renamed) and
//     dropped when it is removed by any protocol, bounded in bytes (a
//     property's value, MaxPropSize; a file's) and in number, and counted
//     against the quotas of who sets them and of the file's paths
//     (ingest.Pipeline.KeepBeside); a folder made by MKCOL counts as a
//     file (CheckFolder, FolderMade);
//   - an XML body (body.go) is read whole within MaxBody, and a PROPFIND
//     or PROPPATCH naming more than MaxRequestProps properties is
//     refused (413) before the library decodes it: what the library
//     holds of a body grows with the properties it names;
//   - a request through a share link is answered in the link's URL
//     space (scope): the library is given the link's URL as its prefix
//     and names below the link's folder, so that no href leaves the
//     link or names the path it stands for;
//   - a COPY or MOVE onto what exists is refused before the library
//     removes the destination, never after (it removes first, then copies
//     or renames): one whose source and destination hold one another, as
//     named or where symbolic links lead (overlap), and one whose copy or
//     rename the limits, quotas or access rules would refuse
//     (checkReplace, replace.go);
//   - a PROPFIND of Depth infinity (or without Depth) is refused with 403
//     and the propfind-finite-depth precondition of RFC 4918 (9.1), and
//     one of Depth 1 walks the folder with small entries and one look-up
//     of the folder's properties, so its memory stays bounded by the
//     entries' size, not by their metadata; it leaves out what the
//     folder's listings hide (largo's precompressed sidecars).
//
// GET, HEAD, PUT and DELETE stay on largo's own paths (package serve):
// sendfile, ranges and the pipeline's PUT. Finder's companions (`._NAME`
// AppleDouble files and .DS_Store) are taken and discarded (Discards):
// largo never stores or serves dotfiles.
//
// A Handler is safe for concurrent use.
package dav

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/wire"
)

// Config configures a Handler. Store and Locks are required.
type Config struct {
	// Store is the store the files live in.
	Store largo.Store
	// Writes is the write pipeline every change goes through; nil serves
	// only PROPFIND.
	Writes *ingest.Pipeline
	// Locks holds the locks and the dead properties; it must be the
	// Guard of Writes, so that writes of other protocols honour them.
	Locks *Locks
	// Logger receives the errors the protocol library reports; nil
	// discards them.
	Logger *slog.Logger
}

// Handler serves the DAV methods. Create one with New.
type Handler struct {
	cfg Config
	log *slog.Logger
}

// New returns the Handler of cfg.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// Discards reports whether name is a companion file that Finder writes
// beside the files it copies (`._NAME`, .DS_Store): such writes are
// taken and thrown away, never stored, since largo neither stores nor
// serves dotfiles, and Finder abandons a copy whose companion is refused.
func Discards(name string) bool {
	base := path.Base(name)
	return base == ".DS_Store" || strings.HasPrefix(base, "._")
}

// ServeDAV serves r, a DAV method that the gate lets through, reading
// through view: the store as its requester may read it. r's URL path is
// a store name; the answer names it, and every name below root, at base
// followed by the rest of the name: a share link's request (base its URL,
// /_largo/s/TOKEN/, root its folder) sees nothing but what is below
// the link's URL. A request at the files' own URLs has base "/" and root
// "". shows, if not nil, returns the test of which entries of the folder
// dir its listings show, which hides sidecars: a PROPFIND of Depth 1
// shows the same, asking it of the folder's sidecars (names of the form
// largo.SidecarBase reads) and of the files they would stand for, in
// name order.
func (h *Handler) ServeDAV(w http.ResponseWriter, r *http.Request, view largo.Store, base, root string, shows func(ctx context.Context, dir string) func(largo.Info) bool) {
	if r.Method == "PROPFIND" && !finiteDepth(r.Header.Get("Depth")) {
		refuseInfinity(w)
		return
	}
	at, err := newScope(base, root)
	if err != nil {
		h.log.Error("webdav", "method", r.Method, "path", r.URL.Path, "err", err)
		writeStatus(w, http.StatusInternalServerError, "internal error")
		return
	}
	name, err := largo.ParseName(r.URL.Path)
	if err == nil && !at.holds(name) {
		err = fmt.Errorf("%s: outside %s: %w", name, root, largo.ErrNotFound)
	}
	if err != nil {
		code, reason := wire.Status(err)
		writeStatus(w, code, reason)
		return
	}
	// The library's request: its URL in the request's own URL space.
	lr := r.Clone(r.Context())
	u := *r.URL
	u.Path, u.RawPath = at.href(name), ""
	if strings.HasSuffix(r.URL.Path, "/") && !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	lr.URL = &u
	var (
		owner   string
		ownerOK bool
	)
	switch r.Method {
	case "PROPFIND", "PROPPATCH", "LOCK":
		body, err := readBody(r)
		if err != nil {
			code, reason := wire.Status(err)
			writeStatus(w, code, reason)
			return
		}
		lr.Body, lr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if r.Method == "LOCK" {
			owner, ownerOK = lockOwner(body)
		}
	default:
		if r.Body != nil {
			lr.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		}
	}
	var dst string
	if r.Method == "COPY" || r.Method == "MOVE" {
		if d, err := url.Parse(r.Header.Get("Destination")); err == nil {
			if n, ok := at.named(d.Path); ok {
				dst = n
			}
		}
	}
	if dst != "" && mayWrite(r.Context(), view, dst) {
		if reason := overlap(r.Context(), view, name, dst); reason != "" {
			writeStatus(w, http.StatusForbidden, reason)
			return
		}
	}
	if r.Method == "MOVE" {
		// The library removes what is at the destination before it
		// finds the source missing: a MOVE of nothing would only delete.
		if _, err := view.Stat(r.Context(), name); err != nil {
			code, reason := wire.Status(err)
			if errors.Is(err, fs.ErrNotExist) {
				code, reason = wire.Status(largo.ErrNotFound)
			}
			writeStatus(w, code, reason)
			return
		}
	}
	if r.Method == "LOCK" {
		if t, ok := grantTimeout(r.Header.Get("Timeout")); ok {
			// The library answers the timeout asked for; the lock lives
			// the one granted.
			lr.Header.Set("Timeout", t)
		}
	}
	if r.Method == "MOVE" && r.Header.Get("Overwrite") == "" {
		// No Overwrite header means T (RFC 4918, 10.6); the library
		// reads it as F for a MOVE.
		lr.Header.Set("Overwrite", "T")
	}
	rl := &requestLocks{Locks: h.cfg.Locks, ctx: r.Context(), at: at, owner: owner, ownerOK: ownerOK, target: name, scoped: true}
	fsys := &fileSystem{h: h, view: view, at: at, locks: rl, tokens: wire.LockTokens(r.Header), propfind: r.Method == "PROPFIND"}
	if fsys.propfind && shows != nil {
		fsys.shows = func(dir string) func(largo.Info) bool { return shows(r.Context(), dir) }
	}
	if dst != "" {
		fsys.src, fsys.dst, fsys.copying = name, dst, r.Method == "COPY"
		if err := fsys.checkNew(r.Context()); err != nil {
			code, reason := wire.Status(err)
			writeStatus(w, code, reason)
			return
		}
	}
	wh := webdav.Handler{
		Prefix:     at.prefix,
		FileSystem: fsys,
		LockSystem: rl,
		Logger: func(r *http.Request, err error) {
			if err != nil {
				h.log.Debug("webdav", "method", r.Method, "path", r.URL.Path, "err", err)
			}
		},
	}
	wh.ServeHTTP(&answer{ResponseWriter: w, failed: func() error {
		if fsys.failed != nil {
			return fsys.failed
		}
		return rl.failed
	}}, lr)
	fsys.close()
}

// overlap returns why a COPY or MOVE of src to dst may not be done, or
// "" when it may: when one holds the other, as named or where they lead
// (asked of the gate, where view is behind one). The library checks only
// the names as spelled, and clears what is at the destination before it
// reads the source: a file copied onto its own folder (or onto a link's
// name for it) would be removed with it, and a folder copied below
// itself through a link would be copied into itself again and again.
// The destination is an entry (a link there is replaced, not followed);
// the source is both its entry and where it leads, as a copy reads
// through a link and a move takes the link.
func overlap(ctx context.Context, view largo.Store, src, dst string) string {
	pairs := [][2]string{{src, dst}}
	if g, ok := view.(gated); ok {
		to := where(ctx, g.Gate(), dst, true)
		pairs = append(pairs, [2]string{where(ctx, g.Gate(), src, true), to}, [2]string{where(ctx, g.Gate(), src, false), to})
	}
	for _, p := range pairs {
		from, to := p[0], p[1]
		switch {
		case from == to:
			return "the destination is the source"
		case largo.Within(from, to):
			return "the destination is inside the source"
		case largo.Within(to, from):
			return "the source is inside the destination, which would be replaced"
		}
	}
	return ""
}

// mayWrite reports whether the requester may write name, as far as view
// can tell: where links lead is looked at only for a requester who may
// act there, and the library's calls refuse the others.
func mayWrite(ctx context.Context, view largo.Store, name string) bool {
	g, ok := view.(gated)
	return !ok || g.Gate().Check(ctx, auth.Write, name, false) == nil
}

// where is gate.Gate.Where, or name itself where links may not be
// followed (the store's calls then follow none either).
func where(ctx context.Context, g *gate.Gate, name string, entry bool) string {
	p, err := g.Where(ctx, name, entry)
	if err != nil {
		return name
	}
	return p
}

// scope is how one request names files: the library sees the URL path
// with prefix taken off ("/a/b"), which stands for a store name below
// root.
type scope struct {
	prefix string // "" or a share link's URL path, without its last slash
	root   string
}

// newScope returns the scope of URL base (ending with a slash) standing
// for the store name root.
func newScope(base, root string) (scope, error) {
	if !strings.HasPrefix(base, "/") || !strings.HasSuffix(base, "/") {
		return scope{}, fmt.Errorf("webdav: base %q: not a URL path ending with a slash", base)
	}
	return scope{prefix: strings.TrimSuffix(base, "/"), root: root}, nil
}

// holds reports whether name is root or below it.
func (s scope) holds(name string) bool {
	return largo.Within(s.root, name)
}

// name returns the store name of a library path (which may be invalid:
// the library's own, as "/a/b", or one a client sent).
func (s scope) name(p string) string {
	rel := clean(path.Clean("/" + p))
	if rel == "" {
		return s.root
	}
	return largo.Join(s.root, rel)
}

// path returns the library path of a store name below root; a name above
// root is shown as root, the highest the request may name.
func (s scope) path(name string) string {
	if !s.holds(name) || name == s.root {
		return "/"
	}
	if s.root == "" {
		return "/" + name
	}
	return name[len(s.root):]
}

// href returns the URL path of a store name, unescaped.
func (s scope) href(name string) string {
	p := s.prefix + s.path(name)
	if p == "" {
		return "/"
	}
	return p
}

// named returns the store name of a URL path of the request's URL space
// (a Destination's); ok is false for one outside it or invalid.
func (s scope) named(urlPath string) (string, bool) {
	rest, ok := strings.CutPrefix(urlPath, s.prefix)
	if !ok || rest != "" && rest[0] != '/' {
		return "", false
	}
	if rest == "" {
		rest = "/"
	}
	name, err := largo.ParseName(rest)
	if err != nil {
		return "", false
	}
	if name == "" {
		return s.root, true
	}
	return largo.Join(s.root, name), true
}

// clean turns a path of the protocol library ("/a/b") into a name.
func clean(p string) string {
	return strings.Trim(p, "/")
}

// answer is the ResponseWriter the library answers through. The library
// turns the errors of a change into statuses of its own: 500 for most,
// 403 for any failed rename or folder made during a COPY, 412 for an If
// header none of whose lists holds. Where the adapter met an error of
// the store, the write pipeline or the locks, answer puts the status and
// one-line reason of the pipeline's table (wire.Status) in their place,
// as a PUT would be answered: 413 and 507 for a COPY too large or out of
// space, 409 for a missing folder, 423 for a lock (in place of the 412
// of an If header that held no lock of the requester's), 403 with its
// reason for another's lock, 507 for a folder a quota has no room for
// (in place of the 405 the library answers a MKCOL that failed).
type answer struct {
	http.ResponseWriter
	failed   func() error // the adapter's error, if any
	replaced bool
}

func (a *answer) WriteHeader(code int) {
	if err := a.failed(); err != nil && (code == http.StatusInternalServerError || code == http.StatusForbidden ||
		code == http.StatusPreconditionFailed && errors.Is(err, largo.ErrLocked) ||
		code == http.StatusMethodNotAllowed && errors.Is(err, largo.ErrNoSpace)) {
		if c, reason := wire.Status(err); c != http.StatusInternalServerError {
			a.replaced = true
			writeStatus(a.ResponseWriter, c, reason)
			return
		}
	}
	a.ResponseWriter.WriteHeader(code)
}

// writeStatus answers with a status and a one-line plain-text reason.
func writeStatus(w http.ResponseWriter, code int, reason string) {
	hdr := w.Header()
	hdr.Del("Content-Length")
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(reason + "\n"))
}

// Write drops the library's own text for a status answer replaced.
func (a *answer) Write(p []byte) (int, error) {
	if a.replaced {
		return len(p), nil
	}
	return a.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the connection's writer.
func (a *answer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// grantTimeout returns the Timeout a LOCK is granted, when it is not the
// one asked for: MaxTimeout in place of none, Infinite, zero or one
// longer. Of a list, the first is taken (RFC 4918, 10.7), as the library
// does; a malformed one is left for the library to refuse.
func grantTimeout(asked string) (string, bool) {
	granted := "Second-" + strconv.Itoa(int(MaxTimeout/time.Second))
	t, _, _ := strings.Cut(asked, ",")
	t = strings.TrimSpace(t)
	if t == "" || t == "Infinite" {
		return granted, true
	}
	n, ok := strings.CutPrefix(t, "Second-")
	if !ok || n == "" || n[0] < '0' || n[0] > '9' {
		return "", false
	}
	sec, err := strconv.ParseInt(n, 10, 64)
	if err != nil || sec > 1<<32-1 {
		return "", false
	}
	if sec == 0 || time.Duration(sec)*time.Second > MaxTimeout {
		return granted, true
	}
	return "", false
}

// finiteDepth reports whether a PROPFIND's Depth is 0 or 1. A missing
// Depth means infinity (RFC 4918, 9.1).
func finiteDepth(d string) bool {
	d = strings.TrimSpace(d)
	return d == "0" || d == "1"
}

// refuseInfinity answers a PROPFIND of infinite depth as RFC 4918 (9.1)
// says a server that does not walk whole trees should: 403 with the
// propfind-finite-depth precondition.
func refuseInfinity(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
		`<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>` + "\n"))
}

// Discards reports whether writes to name are taken and dropped (see the
// function Discards).
func (h *Handler) Discards(name string) bool { return Discards(name) }
