package ingest

import (
	"context"
	"errors"
	"strings"

	"largo"
)

// MoveByCopy moves the file or folder from to to in a store that cannot
// rename (a bucket: no largo.Renamer, or one that answers
// largo.ErrUnsupported), by copies and removals. A file is copied (by the
// store itself where it can, largo.Copier, else streamed through a write
// of this pipeline), then removed under If-Match of the ETag it had when
// it was looked at, so that a file replaced meanwhile stays where it was;
// a folder is made at to, its entries moved one by one, and it is removed
// when nothing is left in it. Every copy and removal is admitted like any
// write (names, locks with tokens, size and space).
//
// view is the store as the requester sees it: what it does not show
// (files the access rules hide from them, hidden names) is not listed, so
// it stays where it was, and so does the folder that holds it; so does a
// symbolic link below from (a bucket has none), which the walk
// (largo.WalkDir) never enters.
//
// It is not atomic: a reader may meet a file at both names for a while,
// and a failure halfway leaves part of a folder at each name; the error
// says where it stopped. WebDAV's MOVE (package dav) and the page's move
// (package serve) both move this way where the store has no rename.
//
// The hooks are told of one move, once it is whole; a move that failed
// halfway is told of no event.
func (p *Pipeline) MoveByCopy(ctx context.Context, view largo.Store, from, to string, tokens []string) error {
	was, _ := view.Stat(ctx, from) // the version moved, for its derived files
	rec := p.recordOf(ctx, from, was, true)
	if err := p.moveByCopy(ctx, view, from, to, tokens); err != nil {
		return err
	}
	p.followMove(ctx, from, to, was, rec)
	p.moved(ctx, from, to)
	return nil
}

func (p *Pipeline) moveByCopy(ctx context.Context, view largo.Store, from, to string, tokens []string) error {
	var open []movedDir // the folders being moved, the innermost last
	err := largo.WalkDir(ctx, view, from, func(name string, in largo.Info, err error) error {
		if err != nil {
			return err
		}
		// A folder the walk has left holds nothing it could move.
		for len(open) > 0 && !largo.Below(open[len(open)-1].from, name) {
			if err := p.leave(ctx, open[len(open)-1]); err != nil {
				return err
			}
			open = open[:len(open)-1]
		}
		if in.Link && name != from {
			return nil // a link stays, as what the view hides does, and so does its folder
		}
		dest := to + name[len(from):]
		rm, err := p.CheckRemove(ctx, name, largo.Condition{}, tokens)
		switch {
		case err != nil:
			return err
		case !in.IsDir:
			return p.moveFile(ctx, view, rm, name, dest, in, tokens)
		}
		if err := p.MakeDirs(ctx, dest); err != nil {
			return err
		}
		open = append(open, movedDir{from: name, to: dest, rm: rm})
		return nil
	})
	for i := len(open) - 1; i >= 0 && err == nil; i-- {
		err = p.leave(ctx, open[i])
	}
	return err
}

// movedDir is a folder being moved by copies.
type movedDir struct {
	from, to string
	rm       largo.Remover
}

// moveFile moves the file from, in, to to: a copy, then the removal of
// the version copied.
func (p *Pipeline) moveFile(ctx context.Context, view largo.Store, rm largo.Remover, from, to string, in largo.Info, tokens []string) error {
	if err := p.copyFile(ctx, view, from, to, in.Size, tokens); err != nil {
		return err
	}
	if err := rm.Remove(ctx, from, largo.RemoveOptions{Condition: largo.Condition{IfMatch: in.ETag}}); err != nil {
		return err
	}
	p.carried(ctx, from, to)
	if p.cfg.Quota != nil {
		p.cfg.Quota.Forget(ctx, from) // the copy counts anew
	}
	p.carryRecord(ctx, from, to) // the copy's commit wrote its digest
	return nil
}

// leave removes the folder d, whose entries have moved, unless something
// stayed in it.
func (p *Pipeline) leave(ctx context.Context, d movedDir) error {
	err := d.rm.Remove(ctx, d.from, largo.RemoveOptions{})
	if err != nil && !errors.Is(err, largo.ErrNotEmpty) && !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	if err == nil {
		p.carried(ctx, d.from, d.to)
	}
	return nil
}

// carried tells the Guard and the quotas that a move by copies put from,
// a file or a folder whose entries moved already, at to: what they keep
// beside it (its dead properties, and what those count) follows it.
func (p *Pipeline) carried(ctx context.Context, from, to string) {
	p.changed(from)
	p.changed(to)
	if p.cfg.Guard != nil {
		p.cfg.Guard.Renamed(ctx, from, to)
	}
	if p.cfg.Quota != nil {
		p.cfg.Quota.Carried(ctx, from, to)
	}
}

// copyFile copies the file from to to: by the store where it can, else
// streamed from view into a write of the pipeline.
func (p *Pipeline) copyFile(ctx context.Context, view largo.Store, from, to string, size int64, tokens []string) error {
	t := Target{Name: to, Size: size, Tokens: tokens, moving: true}
	if w, err := p.BeginCopy(ctx, t, from); err == nil {
		defer w.Abort()
		_, err = w.Commit(context.WithoutCancel(ctx))
		return err
	} else if !errors.Is(err, largo.ErrUnsupported) {
		return err
	}
	src, err := view.Open(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	w, err := p.Begin(ctx, t)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.ReadFrom(src); err != nil {
		return err
	}
	_, err = w.Commit(context.WithoutCancel(ctx))
	return err
}

// MakeDirs makes the folder to, and the folders above it that are
// missing, for a folder moved or copied where its front end saw its
// parent: on a bucket, where a folder is only the prefix of the keys
// below it, the removal of a file a folder moves onto (WebDAV's
// Overwrite) takes away its folder too when it was the last thing there.
// A folder already there is no error.
func (p *Pipeline) MakeDirs(ctx context.Context, to string) error {
	dm, ok := p.cfg.Store.(largo.DirMaker)
	if !ok {
		return nil
	}
	err := dm.MakeDir(ctx, to)
	if errors.Is(err, largo.ErrNotFound) && to != "" {
		if i := strings.LastIndexByte(to, '/'); i > 0 {
			if err := p.MakeDirs(ctx, to[:i]); err != nil {
				return err
			}
			err = dm.MakeDir(ctx, to)
		}
	}
	if err != nil && !errors.Is(err, largo.ErrExist) && !errors.Is(err, largo.ErrUnsupported) {
		return err
	}
	return nil
}
