package ingest

import (
	"context"
	"errors"
	"path"
	"strings"

	"largo"
	"largo/record"
)

// Derived names the files derived from a file, which follow it through
// every change (package sidecar: its precompressed sidecars, sent as its
// encoding). The pipeline tells it of each change to a file wherever the
// change is made, whatever protocol carried it: a commit (a write, a
// copy, a placed upload), a removal (Removed, Expired), a move (Renamed,
// MoveByCopy); and removes what it names, through the pipeline's own
// removal (names, locks, If-Match of the version named), telling Forget
// of each (digest, quotas, properties). Implementations must be safe for
// concurrent use.
type Derived interface {
	// Follow returns the derived files that ch leaves without the version
	// they stood for: those of the version that went, and those that
	// were there before the version that came, which they cannot stand
	// for. A file of its own that merely has such a name is never among
	// them.
	Follow(ctx context.Context, ch Change) []Stale
	// Removed is told of each file Follow named, once the pipeline
	// removed it (err nil: what is kept of it goes too) or failed to.
	Removed(ctx context.Context, name string, err error)
	// Housekeeping returns the context derived files are looked at and
	// removed under: the server's own, whoever made the change.
	Housekeeping(ctx context.Context) context.Context
}

// Change is a change to the file Name.
type Change struct {
	// Name is the file changed.
	Name string
	// Was is the version at Name before the change: zero when there was
	// none, or it is not known.
	Was largo.Info
	// Now is the version at Name after it: zero when there is none (it
	// was removed, or moved away).
	Now largo.Info
	// Record is the record the version that went (Was) had, nil when it
	// had none or it is not known: it names the sidecars largo wrote of
	// it (record.File.Sidecars).
	Record *record.File
}

// Stale is a derived file to remove.
type Stale struct {
	// Name is the derived file.
	Name string
	// ETag is its version when Follow judged it: a file replaced since is
	// someone's own, and stays.
	ETag string
}

// follow removes the derived files that ch leaves behind.
func (p *Pipeline) follow(ctx context.Context, ch Change) {
	d := p.cfg.Derived
	if d == nil || ch.Name == "" {
		return
	}
	ctx = d.Housekeeping(ctx)
	for _, s := range d.Follow(ctx, ch) {
		cond := largo.Condition{IfMatch: s.ETag}
		rm, err := p.CheckRemove(ctx, s.Name, cond, nil)
		if err == nil {
			err = rm.Remove(ctx, s.Name, largo.RemoveOptions{Condition: cond})
		}
		switch {
		case err == nil:
			p.Forget(ctx, s.Name)
		case errors.Is(err, largo.ErrNotFound):
			err = nil // gone already: what is kept of it may go
		}
		d.Removed(ctx, s.Name, err)
	}
}

// followMove tells Derived of the move of from to to. A rename keeps the
// version (was zero: it is what is at to now), and the derived files at
// to were there before it came; a move by copies made to anew, and its
// commit told of it, so only from is left to tell of (was: the version
// moved). A folder's derived files moved with it, and their records with
// them (moveRecords).
func (p *Pipeline) followMove(ctx context.Context, from, to string, was largo.Info, rec *record.File) {
	d := p.cfg.Derived
	if d == nil || was.IsDir {
		return
	}
	// A folder's name may come with its slash (WebDAV's).
	from, to = strings.TrimSuffix(from, "/"), strings.TrimSuffix(to, "/")
	renamed := was == (largo.Info{})
	if renamed {
		now, err := p.cfg.Store.Stat(d.Housekeeping(ctx), to)
		if err != nil || now.IsDir {
			return
		}
		p.follow(ctx, Change{Name: to, Now: now})
		was = now
		was.Name = path.Base(from)
	}
	p.follow(ctx, Change{Name: from, Was: was, Record: rec})
}

// landChecker is a store that is told of each file committed through it
// and may take it back (the access gate's: a drop box's file that would
// now be taken for another file's encoding).
type landChecker interface {
	Landed(ctx context.Context, name string, in largo.Info) error
}

// landed asks the store whether the file just committed at name may
// stay; an error means it was taken back.
func (p *Pipeline) landed(ctx context.Context, name string, in largo.Info) error {
	if lc, ok := p.cfg.Store.(landChecker); ok {
		return lc.Landed(ctx, name, in)
	}
	return nil
}

// priorVersion sets t.was, the version a write to t.Name would replace,
// for Derived, when admission did not look (Place's admission looks at
// nothing).
func (p *Pipeline) priorVersion(ctx context.Context, t *Target) {
	if p.cfg.Derived == nil || t.was != (largo.Info{}) {
		return
	}
	if in, err := p.cfg.Store.Stat(ctx, t.Name); err == nil && !in.IsDir {
		t.was = in
	}
}
