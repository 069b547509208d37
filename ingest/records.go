package ingest

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"

	"largo"
	"largo/record"
)

// The record of each file (Config.Files) is written once, when the
// write that made the file commits, with what each part of the pipeline
// knows of it: the SHA-256 of its bytes, whose quota it counts against
// (Claim.Commit), the link it came through and when it expires by it
// (Lander), and for a sidecar the version of the original it was made
// from (Target.Source). A removal drops it, a move carries it. A failure
// to keep a record fails no write: it is logged, and what the record
// would have told is not known (no Repr-Digest; the quotas count the
// file at their next pass).

// newRecord is the record of the version in of t's file, with its
// digest, before the quotas and the landing fill in theirs.
func newRecord(t *Target, in largo.Info, sum []byte) record.File {
	rec := record.File{Name: t.Name, ETag: in.ETag, Size: in.Size, Source: t.Source, Meta: t.Meta}
	if len(sum) > 0 {
		rec.SHA256 = hex.EncodeToString(sum)
	}
	return rec
}

// keepRecord writes rec.
func (p *Pipeline) keepRecord(ctx context.Context, rec record.File) {
	if p.cfg.Files == nil || rec.ETag == "" {
		return
	}
	if err := p.cfg.Files.Put(context.WithoutCancel(ctx), rec); err != nil {
		p.logf("keeping the record of a file", "name", rec.Name, "err", err)
	}
}

// recorded returns the SHA-256 recorded for the version etag of name, or
// nil: what a copy of that version carries.
func (p *Pipeline) recorded(ctx context.Context, name, etag string) []byte {
	if p.cfg.Files == nil || etag == "" {
		return nil
	}
	rec, err := p.cfg.Files.Of(ctx, name, etag)
	if err != nil {
		return nil
	}
	return rec.Sum()
}

// dropRecord drops the record of name, just removed or moved away,
// unless a file is there again with the version it describes (a write
// that committed meanwhile, and wrote its own). A folder has no record;
// those of the files that were below it are left to the records' sweep.
func (p *Pipeline) dropRecord(ctx context.Context, name string) {
	f := p.cfg.Files
	if f == nil {
		return
	}
	rec, err := f.Get(ctx, name)
	if err != nil {
		return
	}
	if in, err := p.cfg.Store.Stat(p.server(ctx), name); err == nil && in.ETag == rec.ETag {
		return
	}
	if err := f.Delete(context.WithoutCancel(ctx), name); err != nil {
		p.logf("dropping the record of a file", "name", name, "err", err)
	}
}

// moveRecords carries the records of from, a file or a folder with all
// below it, to to, where a rename just put it: a record moves whole to a
// file that kept the version it describes (a rename keeps a file's
// bytes, and on a folder its ETag), so that a store whose rename changed
// the version loses the digest rather than serve a wrong one.
func (p *Pipeline) moveRecords(ctx context.Context, from, to string) {
	f := p.cfg.Files
	if f == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	// What is at to now was at from, name for name: to is a prefix of
	// every name the walk gives.
	largo.WalkDir(p.server(ctx), p.cfg.Store, to, func(name string, in largo.Info, err error) error {
		if err != nil || in.IsDir || in.Link {
			return nil // a link's record is its target's, where it is
		}
		if err := f.Move(ctx, from+strings.TrimPrefix(name, to), name, in); err != nil && !errors.Is(err, largo.ErrNotFound) {
			p.logf("moving the record of a file", "name", name, "err", err)
		}
		return nil
	})
}

// recordOf returns the record of the file name if it describes the
// version in (any version, when in is zero: a rename keeps it), else nil;
// with fresh, as the state holds it now (another process, largo
// precompress, may have named sidecars in it since this one read it),
// else as the cache has it (a write's commit, whose admission read it a
// moment ago).
func (p *Pipeline) recordOf(ctx context.Context, name string, in largo.Info, fresh bool) *record.File {
	if p.cfg.Files == nil {
		return nil
	}
	get := p.cfg.Files.Get
	if fresh {
		get = p.cfg.Files.Read
	}
	rec, err := get(ctx, name)
	if err != nil || in.ETag != "" && rec.ETag != in.ETag {
		return nil
	}
	return &rec
}

// carryRecord gives the copy at to, whose commit wrote its record, what
// the record of from said of the same version that a copy cannot know (a
// sidecar's source, the sidecars written of it), and drops the record of
// from.
func (p *Pipeline) carryRecord(ctx context.Context, from, to string) {
	f := p.cfg.Files
	if f == nil {
		return
	}
	if old, err := f.Get(ctx, from); err == nil && (old.Source != "" || len(old.Sidecars) > 0) {
		_, err := f.Update(context.WithoutCancel(ctx), to, func(rec *record.File, exists bool) (record.Change, error) {
			if !exists || rec.ETag != old.ETag {
				return record.Keep, nil
			}
			rec.Source, rec.Sidecars = old.Source, old.Sidecars
			return record.Write, nil
		})
		if err != nil {
			p.logf("carrying the record of a file", "name", to, "err", err)
		}
	}
	p.dropRecord(ctx, from)
}

// logf logs a failure that fails no write.
func (p *Pipeline) logf(msg string, args ...any) { p.cfg.Logger.Warn(msg, args...) }

// server returns the context of the server's own calls.
func (p *Pipeline) server(ctx context.Context) context.Context {
	if p.cfg.Server == nil {
		return ctx
	}
	return p.cfg.Server(ctx)
}
