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
// it stays where it was, and so does the folder that holds it.
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
	in, err := view.Stat(ctx, from)
	if err != nil {
		return err
	}
	rm, err := p.CheckRemove(ctx, from, largo.Condition{}, tokens)
	if err != nil {
		return err
	}
	if !in.IsDir {
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
	if err := p.MakeDirs(ctx, to); err != nil {
		return err
	}
	// The names first: the folder changes while its entries move.
	var children []string
	for c, err := range view.List(ctx, from) {
		if err != nil {
			return err
		}
		children = append(children, c.Name)
	}
	for _, c := range children {
		if err := p.moveByCopy(ctx, view, largo.Join(from, c), largo.Join(to, c), tokens); err != nil {
			return err
		}
	}
	err = rm.Remove(ctx, from, largo.RemoveOptions{})
	if err != nil && !errors.Is(err, largo.ErrNotEmpty) && !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	if err == nil {
		p.carried(ctx, from, to)
	}
	return nil
}

// carried tells the Guard and the quotas that a move by copies put from,
// a file or a folder whose entries moved already, at to: what they keep
// beside it (its dead properties, and what those count) follows it.
func (p *Pipeline) carried(ctx context.Context, from, to string) {
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
