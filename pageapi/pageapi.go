// Package pageapi is the folder page's own API: the routes under the
// reserved prefix /_largo/ that the page of package ui calls, and what
// that page offers its visitor. It manages files (moves and renames,
// new folders: manage.go; a removal is the file tree's own DELETE),
// tells the page which actions the gate would let through (MayPath),
// searches names below a folder (search.go), sends some entries of a
// folder as one archive (selection.go), makes, lists, extends and
// revokes share links (share.go), and signs a browser in (login.go).
//
// It is a front end like the others, never a second server: it is
// given the gate, the store through the gate, the write pipeline, the
// listings' bounds and what sends archives (Config), and is mounted by
// package serve behind the same front door as the file tree (host
// names, credentials and share links, pacing, CORS), so that every
// request reaches it with its principal in the context (package gate).
// Every store call it makes is decided by the gate; every change goes
// through the write pipeline's checks (names, locks, quotas); its
// searches and selections take from the listings' budget, counted for
// their client (gate.ClientKeys), and hide the sidecars listings hide
// (sidecar.Policy). Its handlers return errors, answered by the one
// adapter the file tree answers with (package reply, through wire's
// status table); a change a browser sends from another site is refused
// (wire.SameOrigin). A share link's visitor reaches none of its routes.
//
// An API is safe for concurrent use.
package pageapi

import (
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"largo"
	"largo/archive"
	"largo/gate"
	"largo/ingest"
	"largo/internal/reply"
	"largo/limit"
	"largo/listing"
	"largo/sidecar"
	"largo/wire"
)

// prefix is the reserved prefix of largo's own endpoints, under which
// every route of this package lies.
const prefix = "/" + largo.ReservedPrefix + "/"

// Archiver answers entries of a folder as one archive, as the file tree
// answers a whole folder's (serve.Archives: give the page the same one,
// so that their archives share the compression slots). Implementations
// must be safe for concurrent use.
type Archiver interface {
	// Serve answers entries, read through store, as one archive in
	// format f whose entries lie in the folder top (archive.Top).
	Serve(w http.ResponseWriter, r *http.Request, store largo.Store, f archive.Format, top string, entries iter.Seq2[archive.Entry, error]) error
}

// Config configures an API. Gate and Store are required.
type Config struct {
	// Gate decides every store call. Its access rules say who may sign
	// in, and its links (Gate.Links; nil: share links are off) are the
	// share links the page makes and lists.
	Gate *gate.Gate
	// Store holds the files, read and written through Gate: a store
	// that is not a *gate.Store already is wrapped in one.
	Store largo.Store
	// Writes is the write pipeline, writing through the same gate's
	// store: it turns on moves, renames and new folders. Nil offers
	// none of them (their routes answer 404).
	Writes *ingest.Pipeline
	// Listing bounds the memory of searches and of the listings of
	// selections: give it the file tree's (serve.Config.Listing), so
	// that all take from one budget. A nil Budget means one of
	// listing.DefaultBudget of the API's own.
	Listing listing.Config
	// Sidecars says which files stand for another as its encoding:
	// searches and selections hide them as listings do. Give it the file
	// tree's (serve.Config.Sidecars); nil hides no file.
	Sidecars *sidecar.Policy
	// Archives sends selections as archives. Nil offers none (the
	// route answers 404).
	Archives Archiver
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// make changes from a browser with their credentials, as for the
	// file tree (serve.Config.CORSOrigins); none means only the server's
	// own pages may.
	CORSOrigins []string
	// Logger receives errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// API serves the folder page's routes. Make one with New.
type API struct {
	cfg  Config
	gate *gate.Gate
	log  *slog.Logger
	errs reply.Errors
}

// New returns the API of cfg. It panics without a Gate or a Store, or
// with a pipeline that does not write through the gate's store.
func New(cfg Config) *API {
	if cfg.Gate == nil || cfg.Store == nil {
		panic("pageapi: Config.Gate and Config.Store are required")
	}
	a := &API{cfg: cfg, gate: cfg.Gate, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.errs = reply.Errors{Log: a.log}
	if a.cfg.Now == nil {
		a.cfg.Now = time.Now
	}
	if _, gated := a.cfg.Store.(*gate.Store); !gated {
		a.cfg.Store = a.gate.Store(a.cfg.Store)
	}
	if w := a.cfg.Writes; w != nil {
		if _, gated := w.Store().(*gate.Store); !gated {
			panic("pageapi: the write pipeline must write through the gate's store")
		}
	}
	if a.cfg.Listing.Budget == nil {
		a.cfg.Listing.Budget = limit.NewBudget(listing.DefaultBudget, 0)
	}
	if a.cfg.Sidecars == nil {
		a.cfg.Sidecars = sidecar.NewPolicy(nil, false, nil) // no records: nothing is a sidecar
	}
	return a
}

// Register adds the API's routes, all under the reserved prefix, to mux:
// the mux of the front door that guards them (serve.Config.Page).
func (a *API) Register(mux *http.ServeMux) {
	h := a.errs.Handler
	mux.Handle("POST "+SharePath, h(a.newShare))
	mux.Handle("GET "+LinksPath, h(a.listLinks))
	mux.Handle("POST "+LinksPath+"{id}", h(a.changeLink))
	mux.Handle("DELETE "+LinksPath+"{id}", h(a.revokeLink))
	if a.cfg.Writes != nil {
		mux.Handle("POST "+MovePath, h(a.move))
		mux.Handle("POST "+MkdirPath, h(a.makeDir))
	}
	mux.Handle("GET "+MayPath, h(a.may))
	mux.Handle("POST "+MayPath, h(a.may))
	mux.Handle("GET "+SearchPath, h(a.search))
	if a.cfg.Archives != nil {
		mux.Handle("GET "+SelectionPath, h(a.selection))
		mux.Handle("POST "+SelectionPath, h(a.selection))
	}
}

// principal returns the principal the front door found for r.
func principal(r *http.Request) gate.Principal {
	p, _ := gate.From(r.Context())
	return p
}

// sameOrigin refuses a change a browser sends from another site.
func (a *API) sameOrigin(r *http.Request) error { return wire.SameOrigin(r, a.cfg.CORSOrigins) }

// listingFor returns the listings' bounds for r: what its search or
// selection takes from the budget counts against the shares of r's
// client.
func (a *API) listingFor(r *http.Request) listing.Config {
	c := a.cfg.Listing
	c.Client = gate.ClientKeys(r.Context(), r.RemoteAddr)
	return c
}

// readForm reads a small URL-encoded form, of at most limit bytes, into
// r.Form (the query's fields too).
func readForm(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return wire.Refuse(http.StatusBadRequest, "bad form")
	}
	return nil
}

// pathName reads v, a URL path, as a store name; a path under the
// reserved prefix or a hidden one is refused, naming field.
func pathName(v, field string) (string, error) {
	name, err := largo.ParseName("/" + strings.TrimPrefix(v, "/"))
	if err != nil || largo.Reserved(name) {
		return "", wire.Refuse(http.StatusBadRequest, field+": not a path this server serves")
	}
	return name, nil
}

// urlPath is the URL path of a store name, escaped, with a slash after a
// folder's.
func urlPath(name string, dir bool) string {
	p := (&url.URL{Path: "/" + name}).EscapedPath()
	if dir && name != "" {
		p += "/"
	}
	return p
}

// writeJSON answers v as JSON, never cached.
func writeJSON(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	return json.NewEncoder(w).Encode(v)
}
