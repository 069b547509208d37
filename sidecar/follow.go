package sidecar

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"strings"

	"largo"
	"largo/encode"
	"largo/gate"
	"largo/ingest"
)

// Follower keeps each file's sidecars following their file. The write
// pipeline tells it of every change to a file, whatever protocol made it
// (ingest.Derived): it names the sidecars the change leaves without the
// version they stood for, the pipeline removes them as the server, and
// their records go. Under the Policy:
//
//   - a file removed, expired or moved away takes along the sidecars
//     that stood for it: recorded ones (from whatever version), or with
//     Any those sent as its encoding (not older than it, of a type and
//     size whose sidecars are sent);
//   - a file replaced (a write, a copy, a placed upload, a move onto it)
//     takes along those of the version replaced, and the sidecars that
//     were there before the new version and would be taken for its
//     encoding (with Any, those not older than it: a move or a placed
//     upload keeps an older time) go too: nothing written before a
//     version is sent as its encoding;
//   - anything else under a sidecar's name (a file of its own that was
//     never sent as an encoding: a lone backup.tar.gz, an older
//     data.csv.gz beside data.csv) stays.
//
// A folder moved takes its sidecars along, records and all (Moved), and a
// folder removed takes them with everything in it. It is safe for
// concurrent use.
type Follower struct {
	pol   *Policy
	store largo.Store
	log   *slog.Logger
}

var _ ingest.Derived = (*Follower)(nil)

// NewFollower returns the Follower of the files of st (looked at only:
// the pipeline removes them) under pol; log receives what could not be
// removed (nil discards it).
func NewFollower(pol *Policy, st largo.Store, log *slog.Logger) *Follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Follower{pol: pol, store: st, log: log}
}

// Follow implements ingest.Derived.
func (f *Follower) Follow(ctx context.Context, ch ingest.Change) []ingest.Stale {
	if !f.concerns(ch) {
		return nil
	}
	if f.pol.any && known(ch.Now) {
		// The time a download compares is the one the store tells now:
		// a commit may tell a finer one (a bucket's are in seconds).
		if in, err := f.store.Stat(ctx, ch.Name); err == nil && in.ETag == ch.Now.ETag {
			ch.Now = in
		}
	}
	var stale []ingest.Stale
	for _, c := range encode.Codings {
		side := encode.Sidecar(ch.Name, c)
		sin, err := f.store.Stat(ctx, side)
		if err != nil {
			if !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir) {
				f.log.Warn("looking at a sidecar", "name", side, "err", err)
			}
			continue
		}
		if !sin.IsDir && sin.ETag != "" && f.stale(ctx, side, sin, ch) {
			stale = append(stale, ingest.Stale{Name: side, ETag: sin.ETag})
		}
	}
	return stale
}

// concerns reports whether ch may leave sidecars behind: a file's change
// (a folder's sidecars move with it), of a type whose sidecars are
// written, as one of its versions tells, or its name.
func (f *Follower) concerns(ch ingest.Change) bool {
	was, now := known(ch.Was), known(ch.Now)
	switch {
	case ch.Was.IsDir || ch.Now.IsDir:
		return false
	case !was && !now:
		return f.pol.compressible(largo.Info{Name: path.Base(ch.Name)})
	}
	return was && f.pol.compressible(ch.Was) || now && f.pol.compressible(ch.Now)
}

// stale reports whether the file side, described by sin, stood for the
// version that went (ch.Was), or would be taken for the one that came
// (ch.Now) though it was there before it.
func (f *Follower) stale(ctx context.Context, side string, sin largo.Info, ch ingest.Change) bool {
	if !f.pol.any {
		rec, ours, err := f.pol.records.Of(ctx, side, sin)
		if err != nil {
			f.log.Warn("reading a sidecar's record", "name", side, "err", err)
		}
		fresh := known(ch.Now) && rec.Source == ch.Now.ETag
		return ours && !fresh
	}
	took := func(orig largo.Info) bool {
		if !known(orig) || !f.pol.Offered(orig) {
			return false
		}
		ok, _ := f.pol.Serves(ctx, side, sin, orig)
		return ok
	}
	return took(ch.Was) || took(ch.Now)
}

// known reports whether in describes a version (not the zero Info).
func known(in largo.Info) bool { return in != (largo.Info{}) }

// Removed implements ingest.Derived: a sidecar removed takes its record
// along.
func (f *Follower) Removed(ctx context.Context, name string, err error) {
	switch {
	case errors.Is(err, largo.ErrPrecondition):
		f.log.Info("a sidecar replaced meanwhile is left as a file of its own", "name", name)
		return
	case err != nil:
		f.log.Warn("a sidecar could not be removed with its file", "name", name, "err", err)
		return
	}
	if err := f.pol.records.Drop(ctx, name); err != nil {
		f.log.Warn("removing a sidecar's record", "name", name, "err", err)
	}
}

// Moved implements ingest.Derived: the records of the sidecars below the
// folder from, now at to, go to their new names (a walk of to, which
// passes links over).
func (f *Follower) Moved(ctx context.Context, from, to string) {
	err := largo.WalkDir(ctx, f.store, to, func(name string, in largo.Info, err error) error {
		_, _, side := largo.SidecarBase(name)
		switch {
		case err != nil:
			f.log.Warn("carrying the records of a moved folder's sidecars", "folder", name, "err", err)
		case side && !in.IsDir && !in.Link:
			// What is at to now was at from, name for name.
			if err := f.pol.records.Carry(ctx, from+strings.TrimPrefix(name, to), name, in); err != nil {
				f.log.Warn("carrying a sidecar's record", "name", name, "err", err)
			}
		}
		return nil
	})
	if err != nil {
		f.log.Warn("carrying the records of a moved folder's sidecars", "folder", to, "err", err)
	}
}

// Housekeeping implements ingest.Derived: sidecars are the server's
// own, removed as the server whoever made the change, and to the end
// when the client has gone.
func (f *Follower) Housekeeping(ctx context.Context) context.Context {
	return gate.With(context.WithoutCancel(ctx), gate.Server())
}
