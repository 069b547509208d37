package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/internal/reply"
	"largo/wire"
)

// WebDAV serves the DAV methods at the files' URLs (package dav). GET,
// HEAD, PUT and DELETE stay this package's: downloads keep sendfile and
// writes the pipeline. Implementations must be safe for concurrent use.
type WebDAV interface {
	// ServeDAV serves r, a DAV method that the gate lets through,
	// reading through view, the store as its requester may read it. r's
	// URL path is a store name (a share link's, rewritten); the answer
	// names every name below root at the URL path base followed by the
	// rest of the name: a share link's URL (/_largo/s/TOKEN/) and folder,
	// or "/" and "" at the files' own URLs. shows returns the test of
	// which entries of the folder dir its listings show (sidecarFilter),
	// for a PROPFIND to hide the same: it is asked of the folder's
	// sidecars and of the files they would stand for, in name order,
	// which is all the test needs.
	ServeDAV(w http.ResponseWriter, r *http.Request, view largo.Store, base, root string, shows func(ctx context.Context, dir string) func(largo.Info) bool)
	// Discards reports whether name is a companion file a client writes
	// beside the files it copies (Finder's ._NAME and .DS_Store), whose
	// writes are taken and thrown away.
	Discards(name string) bool
}

// davMethods are the methods Config.DAV serves, each with the
// permission it needs on its own name; davNeeds adds what it needs below
// that name and at a COPY's or MOVE's destination.
var davMethods = map[string]auth.Perm{
	"PROPFIND":  0, // list or read, by what the name is
	"PROPPATCH": auth.Write,
	"MKCOL":     auth.Write,
	"LOCK":      auth.Write,
	"UNLOCK":    auth.Write,
	"COPY":      auth.Read,
	"MOVE":      auth.Read | auth.Delete,
}

// davAllow is the Allow header of the file tree with WebDAV on.
const davAllow = ", PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK"

// davHeaders sets what an OPTIONS answer tells WebDAV clients: the
// compliance classes (1, and 2 when writes are on: LOCK needs them)
// and, for Windows' Mini-Redirector, MS-Author-Via.
func davHeaders(hdr http.Header, writes bool) {
	if writes {
		hdr.Set("DAV", "1, 2")
	} else {
		hdr.Set("DAV", "1")
	}
	hdr.Set("MS-Author-Via", "DAV")
}

// dav checks a DAV method the way write checks a write (writes on, a
// browser's origin, then the permissions davNeeds names), then hands it
// to Config.DAV. A drop-box link passes no DAV method: it only creates
// files, by PUT and POST.
func (h *Handler) dav(w http.ResponseWriter, r *http.Request, name string, perm auth.Perm) error {
	if r.Method != "PROPFIND" {
		if h.cfg.Writes == nil {
			return &reply.MethodError{Allow: readMethods + ", PROPFIND"}
		}
		if err := h.sameOrigin(r); err != nil {
			return err
		}
	}
	if err := h.ownDestination(r); err != nil {
		return err
	}
	discarded := h.cfg.DAV.Discards(name) && (r.Method == "LOCK" || r.Method == "UNLOCK")
	if largo.Reserved(name) && !discarded {
		return fmt.Errorf("%s: hidden: %w", name, largo.ErrNotFound)
	}
	if discarded {
		// A companion file's lock, which locks nothing stored: the
		// folder's rule for a new name is what is asked.
		name = largo.Join(largo.Parent(name), gate.NewName)
	}
	if err := h.davNeeds(r, name, perm); err != nil {
		return err
	}
	base, root := "/", ""
	if v := viewOf(r); v != nil {
		// A share link's request: named in the link's URL space, never
		// by the path it stands for.
		base, root = v.Base, v.Root
	}
	h.cfg.DAV.ServeDAV(w, r, h.cfg.Store, base, root, h.sidecarFilter)
	return nil
}

// davNeeds asks the gate, before anything changes, what a DAV method
// needs; the store calls the method then makes are decided again, one by
// one, but a method that acts on a whole folder must not stop half-way
// for want of a permission it could have been refused for at once:
//   - PROPFIND: list on a folder, read on a file (its entries are
//     filtered by the gate);
//   - PROPPATCH, MKCOL, UNLOCK: write on the name;
//   - LOCK: write on the name, and below it unless Depth is 0;
//   - COPY: read of the source, read and list of all below a folder, and
//     write of the destination (of all below it for a folder);
//   - MOVE: as COPY, with delete where it reads, and no list unless the
//     store moves a folder by copies (gate.MoveNeeds);
//   - COPY and MOVE onto a destination that exists: delete of it and all
//     below it, unless a file replaces a file, which needs write alone,
//     as a PUT that replaces one does.
//
// A drop-box link passes none (gate.CheckDAV). A COPY or MOVE of a
// missing source is 404.
func (h *Handler) davNeeds(r *http.Request, name string, perm auth.Perm) error {
	ctx := r.Context()
	check := func(perm auth.Perm, name string, tree bool) error { return h.gate.CheckDAV(ctx, perm, name, tree) }
	switch r.Method {
	case "COPY", "MOVE":
	case "PROPFIND":
		// A read: of a folder, its listing; of a file, the file. First
		// read or list at all (refused alike whether the name exists or
		// not), then what it is decides which.
		if err := check(auth.Read, name, false); err != nil && check(auth.List, name, false) != nil {
			return err
		}
		in, err := h.cfg.Store.Stat(ctx, name)
		if err != nil {
			return err
		}
		if in.IsDir {
			return check(auth.List, name, false)
		}
		return check(auth.Read, name, false)
	case "LOCK":
		return check(perm, name, strings.TrimSpace(r.Header.Get("Depth")) != "0")
	default:
		return check(perm, name, false)
	}
	if err := check(0, name, false); err != nil {
		return err
	}
	src, statErr := h.cfg.Store.Stat(ctx, name)
	isDir := statErr == nil && src.IsDir
	if ow := r.Header.Get("Overwrite"); ow != "" && ow != "T" && ow != "F" {
		return errOverwrite
	}
	dst, err := destination(r)
	if err != nil {
		return err
	}
	if err := ingest.CheckName(dst); err != nil {
		return err
	}
	// A copy into itself would copy what it makes, without end; a
	// folder cannot move into itself (RFC 4918, 9.8.5: 403).
	if largo.Within(name, dst) {
		return errIntoItself
	}
	switch {
	case r.Method == "MOVE":
		perm = gate.MoveNeeds(h.cfg.Store, isDir)
	case isDir:
		perm |= auth.List
	}
	if err := check(perm, name, isDir); err != nil {
		return err
	}
	if statErr != nil {
		return statErr
	}
	if err := check(auth.Write, dst, isDir); err != nil {
		return err
	}
	if r.Header.Get("Overwrite") == "F" {
		return nil // the library refuses an existing destination (412)
	}
	old, err := h.cfg.Store.Stat(ctx, dst)
	if err != nil || !isDir && !old.IsDir {
		return nil // nothing there to remove, or a file replaced in place
	}
	return check(auth.Delete, dst, true)
}

var errOverwrite = wire.Refuse(http.StatusBadRequest, "bad Overwrite header: T or F")

var errIntoItself = wire.Refuse(http.StatusForbidden, "Destination is the source or inside it")

var errDestination = wire.Refuse(http.StatusBadRequest, "bad Destination header: an absolute URL or path on this server")

// destination returns the store name of a COPY's or MOVE's Destination,
// which ownDestination made a path of this server.
func destination(r *http.Request) (string, error) {
	u, err := url.Parse(r.Header.Get("Destination"))
	if err != nil || u.Path == "" {
		return "", errDestination
	}
	if u.Host != "" && !strings.EqualFold(u.Host, r.Host) {
		return "", errOtherServer
	}
	return largo.ParseName(u.Path)
}

var errOtherServer = wire.Refuse(http.StatusBadGateway, "Destination on another server")

// ownDestination makes a COPY's or MOVE's Destination that names this
// server by another of its own names (localhost for 127.0.0.1: one of
// Config.Hosts, on the port the request came to) a path, which both this
// package and the protocol library read as this server's. Another host is
// 502, as RFC 4918 says.
func (h *Handler) ownDestination(r *http.Request) error {
	d := r.Header.Get("Destination")
	if d == "" {
		return nil
	}
	u, err := url.Parse(d)
	if err != nil || u.Host == "" || strings.EqualFold(u.Host, r.Host) {
		return nil // a path, this very host, or destination's own refusal
	}
	if h.cfg.Hosts == nil || !hostIn(h.cfg.Hosts, u.Host) || portOf(u.Host, u.Scheme == "https") != portOf(r.Host, r.TLS != nil) {
		return errOtherServer
	}
	r.Header.Set("Destination", (&url.URL{Path: u.Path, RawPath: u.RawPath}).EscapedPath())
	return nil
}

// portOf returns the port of a Host, or the scheme's when it names none.
func portOf(host string, https bool) string {
	if _, p, err := net.SplitHostPort(host); err == nil {
		return p
	}
	if https {
		return "443"
	}
	return "80"
}

// discard takes a write of a companion file and keeps nothing: the body
// is read and dropped, like any body, under the transfer's deadlines.
func (h *Handler) discard(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodPut {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return ingest.BodyErr(err)
		}
		w.WriteHeader(http.StatusCreated)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
