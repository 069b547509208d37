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
//   - locks (locks.go) are records in the store's state area, taken with
//     conditional creates and refreshed, released or taken over only as
//     they were read (largo.StateSwapper), so that every instance serving
//     one bucket sees the same locks and of two taking one expired lock
//     exactly one wins; Sweep removes the expired ones. Through
//     ingest.Guard they refuse writes of every protocol (PUT, forms, tus,
//     IETF uploads, DELETE) that do not present the lock's token (423);
//   - the library answers the errors of a change with statuses of its own
//     (500, 403); ServeDAV answers them from the pipeline's table instead
//     (answer, in this file), as a PUT would be;
//   - dead properties (props.go) are records in the state area too, one
//     per file, moved with it by MOVE and dropped when it is removed by
//     any protocol;
//   - a PROPFIND of Depth infinity (or without Depth) is refused with 403
//     and the propfind-finite-depth precondition of RFC 4918 (9.1), and
//     one of Depth 1 walks the folder with small entries and one look-up
//     of the folder's properties, so its memory stays bounded by the
//     entries' size, not by their metadata.
//
// GET, HEAD, PUT and DELETE stay on largo's own paths (package serve):
// sendfile, ranges and the pipeline's PUT. Finder's companions (`._NAME`
// AppleDouble files and .DS_Store) are taken and discarded (Discards):
// largo never stores or serves dotfiles.
//
// A Handler is safe for concurrent use.
package dav

import (
	"errors"
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
	"largo/ingest"
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

// MaxBody bounds the XML body of a DAV request (PROPFIND, PROPPATCH,
// LOCK), which the protocol library reads whole.
const MaxBody = 1 << 20

// Discards reports whether name is a companion file that Finder writes
// beside the files it copies (`._NAME`, .DS_Store): such writes are
// taken and thrown away, never stored, since largo neither stores nor
// serves dotfiles, and Finder abandons a copy whose companion is refused.
func Discards(name string) bool {
	base := path.Base(name)
	return base == ".DS_Store" || strings.HasPrefix(base, "._")
}

// ServeDAV serves r, a DAV method that the access rules have let
// through, reading through view: the store as its requester may read it.
func (h *Handler) ServeDAV(w http.ResponseWriter, r *http.Request, view largo.Store) {
	if r.Method == "PROPFIND" && !finiteDepth(r.Header.Get("Depth")) {
		refuseInfinity(w)
		return
	}
	if r.Body != nil {
		// The library reads XML bodies whole: bound them.
		r2 := *r
		r2.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		r = &r2
	}
	if r.Method == "MOVE" {
		// The library removes what is at the destination before it
		// finds the source missing: a MOVE of nothing would only delete.
		name, err := storeName("move", r.URL.Path)
		if err == nil {
			_, err = view.Stat(r.Context(), name)
		}
		if err != nil {
			code, reason := ingest.Status(err)
			if errors.Is(err, fs.ErrNotExist) {
				code, reason = ingest.Status(largo.ErrNotFound)
			}
			writeStatus(w, code, reason)
			return
		}
	}
	if r.Method == "LOCK" {
		if t, ok := grantTimeout(r.Header.Get("Timeout")); ok {
			// The library answers the timeout asked for; the lock lives
			// the one granted.
			r = r.Clone(r.Context())
			r.Header.Set("Timeout", t)
		}
	}
	if r.Method == "MOVE" && r.Header.Get("Overwrite") == "" {
		// No Overwrite header means T (RFC 4918, 10.6); the library
		// reads it as F for a MOVE.
		r = r.Clone(r.Context())
		r.Header.Set("Overwrite", "T")
	}
	rl := &requestLocks{Locks: h.cfg.Locks, target: clean(path.Clean("/" + r.URL.Path)), scoped: true}
	fsys := &fileSystem{h: h, view: view, locks: rl, tokens: ingest.LockTokens(r.Header)}
	if r.Method == "COPY" || r.Method == "MOVE" {
		if u, err := url.Parse(r.Header.Get("Destination")); err == nil {
			src, err1 := storeName("copy", r.URL.Path)
			dst, err2 := storeName("copy", u.Path)
			if err1 == nil && err2 == nil {
				fsys.src, fsys.dst = src, dst
			}
		}
	}
	wh := webdav.Handler{
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
	}}, r)
	fsys.close()
}

// answer is the ResponseWriter the library answers through. The library
// turns the errors of a change into statuses of its own: 500 for most,
// 403 for any failed rename or folder made during a COPY. Where the
// adapter met an error of the store or the write pipeline, answer puts
// the status and one-line reason of the pipeline's table (ingest.Status)
// in their place, as a PUT would be answered: 413 and 507 for a COPY too
// large or out of space, 409 for a missing folder, 423 for a lock.
type answer struct {
	http.ResponseWriter
	failed   func() error // the adapter's error, if any
	replaced bool
}

func (a *answer) WriteHeader(code int) {
	if err := a.failed(); err != nil && (code == http.StatusInternalServerError || code == http.StatusForbidden) {
		if c, reason := ingest.Status(err); c != http.StatusInternalServerError && c != code {
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
