package pageapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"largo"
	"largo/auth"
	"largo/internal/reply"
	"largo/limit"
	"largo/ui"
	"largo/wire"
)

// SearchPath finds names below a folder: GET with path (the folder's URL
// path), q (text to find in names, without regard to case, as the page's
// filter finds it) and limit (the most matches to send: DefaultSearchLimit
// when absent, at most MaxSearchLimit). Without q, nothing is matched and
// only the counts of the last line are sent: what a folder holds, which the
// page tells before it removes one.
//
// The answer streams as JSON lines (application/x-ndjson), each sent as
// it is found: a match,
//
//	{"href":"./sub/a%20b.txt","name":"sub/a b.txt","dir":false,"size":12,"modified":"2025-03-14T15:09:26Z"}
//
// where href is the match's URL relative to the folder's and name its
// path below the folder as a page shows it (largo.EscapeName); now and
// then a line of progress, {"searched":N}, the entries looked at so far;
// and last
//
//	{"done":true,"files":F,"folders":D,"bytes":B,"matches":M,"more":false,"skipped":S}
//
// with the files, folders and bytes looked at, whether more matches were
// left unsent past the limit (the walk stops there), and the folders not
// searched (not listable, or deeper than maxSearchDepth). An error after
// the answer began ends it with {"done":true,"error":"REASON",...}.
//
// The walk goes through the gated store, which lists only what the
// requester may see; it goes depth-first, each folder's entries as the
// store yields them, so it holds one listing's buffer per level, never a
// folder's names or the matches, and takes searchMemory from the listings'
// budget while it runs, counted for its client (503 with a Retry-After
// when the budget, or the client's share of it, has none left).
// Folders reached through a symbolic link are not searched (they could
// lead back up), nor are precompressed sidecars found.
const SearchPath = prefix + "search"

// Bounds of a search: the matches it sends, the folders it goes down.
const (
	DefaultSearchLimit = 500
	MaxSearchLimit     = 10000
	maxSearchDepth     = 32
	maxSearchText      = 256
)

// searchMemory is what a search takes from the listings' budget: the
// listing buffers of its levels (a folder's store yields a few hundred
// entries at a time) and its output buffer.
const searchMemory = 1 << 20

// searchProgress is how often a search that finds nothing says how far
// it got.
const searchProgress = 500 * time.Millisecond

// match is a line of a search's answer.
type match struct {
	Href     string    `json:"href"`
	Name     string    `json:"name"`
	Dir      bool      `json:"dir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified,omitzero"`
}

// searchEnd is the last line of a search's answer.
type searchEnd struct {
	Done    bool   `json:"done"`
	Files   int64  `json:"files"`
	Folders int64  `json:"folders"`
	Bytes   int64  `json:"bytes"`
	Matches int    `json:"matches"`
	More    bool   `json:"more"`
	Skipped int64  `json:"skipped"`
	Error   string `json:"error,omitempty"`
}

// search answers SearchPath.
func (a *API) search(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	name, err := pathName(q.Get("path"), "path")
	if err != nil {
		return err
	}
	text := strings.TrimSpace(q.Get("q"))
	if len(text) > maxSearchText {
		return wire.Refuse(http.StatusBadRequest, "q: at most 256 bytes")
	}
	max := DefaultSearchLimit
	if v := q.Get("limit"); v != "" {
		if max, err = strconv.Atoi(v); err != nil || max < 1 || max > MaxSearchLimit {
			return wire.Refuse(http.StatusBadRequest, "limit: a number from 1 to "+strconv.Itoa(MaxSearchLimit))
		}
	}
	ctx := r.Context()
	if err := a.gate.Check(ctx, auth.List, name, false); err != nil {
		return err
	}
	in, err := a.cfg.Store.Stat(ctx, name)
	if err != nil {
		return err
	}
	if !in.IsDir {
		return wire.Refuse(http.StatusBadRequest, "path: not a folder")
	}
	lc := a.listingFor(r)
	budget, client := lc.Budget, lc.Client
	if !budget.TryTake(searchMemory, client...) {
		w.Header().Set("Retry-After", strconv.Itoa(int(limit.RetryAfter.Seconds())))
		return wire.Refuse(http.StatusServiceUnavailable, "busy: too many searches and listings at once; retry later")
	}
	defer budget.Give(searchMemory, client...)

	hdr := w.Header()
	hdr.Set("Content-Type", "application/x-ndjson")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f := &finder{a: a, ctx: ctx, out: bufio.NewWriterSize(w, 8<<10), rc: http.NewResponseController(w), limit: max}
	if text != "" {
		f.match = ui.View{Filter: text}.Matcher()
	}
	f.next = a.cfg.Now().Add(searchProgress)
	err = largo.WalkDir(ctx, a.cfg.Store, name, f.visit(name))
	end := f.end
	end.Done = true
	if err != nil {
		_, end.Error = reply.Status(err)
	}
	f.line(&end)
	return nil // an error is told in the last line
}

// finder is one search's walk.
type finder struct {
	a     *API
	ctx   context.Context
	out   *bufio.Writer
	rc    *http.ResponseController
	match func(string) bool // nil: count only
	limit int
	end   searchEnd
	seen  int64
	next  time.Time // when progress is due
}

// visit returns the walk of a search of the folder root: each entry
// below it counted, matched and, for a folder no deeper than
// maxSearchDepth, searched too.
func (f *finder) visit(root string) largo.WalkDirFunc {
	return func(name string, in largo.Info, err error) error {
		switch {
		case err != nil && name == root:
			return err
		case err != nil:
			f.end.Skipped++ // a folder that may be seen but not listed
			return nil
		case name == root:
			return nil
		}
		f.seen++
		if f.a.cfg.Sidecars.Hides(f.ctx, f.a.cfg.Store, largo.Parent(name), in, f.a.log) {
			return nil
		}
		rel := strings.TrimPrefix(name[len(root):], "/")
		if in.IsDir {
			f.end.Folders++
		} else {
			f.end.Files++
			f.end.Bytes += in.Size
		}
		if f.match != nil && f.match(in.Name) {
			if f.end.Matches == f.limit {
				f.end.More = true
				return largo.SkipAll
			}
			f.end.Matches++
			m := match{Href: ui.Href(rel, in.IsDir), Name: largo.EscapeName(rel), Dir: in.IsDir, Size: in.Size, Modified: in.ModTime}
			if err := f.line(&m); err != nil {
				return err
			}
		}
		if f.seen%256 == 0 {
			if now := f.a.cfg.Now(); now.After(f.next) {
				f.next = now.Add(searchProgress)
				if err := f.line(map[string]int64{"searched": f.seen}); err != nil {
					return err
				}
			}
		}
		if in.IsDir && !in.Link && strings.Count(rel, "/")+1 >= maxSearchDepth {
			f.end.Skipped++
			return largo.SkipDir
		}
		return nil
	}
}

// line sends one line of the answer, at once.
func (f *finder) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f.out.Write(b)
	f.out.WriteByte('\n')
	if err := f.out.Flush(); err != nil {
		return err
	}
	return f.rc.Flush()
}
