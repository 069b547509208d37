package dav

import (
	"context"
	"errors"
	"fmt"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
)

// gated is the store of a request behind the access gate, which can be
// asked about a call before it is made.
type gated interface {
	Gate() *gate.Gate
}

// checkNew admits, before a COPY or MOVE to a destination where nothing
// is starts, what checkReplace admits before one replaces what is there:
// the library copies a folder file by file, and a refusal met half way
// (a quota, a file over the size limit, a name refused) would leave the
// files copied before it. A destination that is there is checked when
// the library removes it (fileSystem.remove).
func (fsys *fileSystem) checkNew(ctx context.Context) error {
	if _, err := fsys.view.Stat(ctx, fsys.dst); !errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	pl, err := fsys.writes()
	if err != nil {
		return nil // the library's answer, as without it
	}
	return fsys.checkReplace(ctx, pl)
}

// checkReplace admits, before the destination of a COPY or MOVE with
// Overwrite is removed, what can be known of the copy or move that is to
// take its place. The library removes the destination first and copies
// or renames after: a refusal of the copy (a file over the size limit, a
// quota or the disk without room, a name its requester may not write) or
// of the rename (a quota, the gate) would then come with the destination
// already gone. So the refusals that can be known are asked here first:
//
//   - a move by rename: what Rename checks (locks on both names, the
//     quotas where it lands, the gate on both trees);
//   - a copy, or a move by copies on a store without rename: each file
//     of the source against the size limit and the gate's write decision
//     at its destination name, and their bytes against the free space
//     and the quotas, as if the destination were still there; for a copy,
//     the files and bytes it lands under each path's quota as well.
//
// What cannot be known before (a hook's refusal of a copied file, a
// disk's error, a source changed meanwhile) still fails after the
// removal.
func (fsys *fileSystem) checkReplace(ctx context.Context, pl *ingest.Pipeline) error {
	src, dst := fsys.src, fsys.dst
	in, err := fsys.view.Stat(ctx, src)
	if err != nil {
		return err
	}
	if !fsys.copying {
		tokens := fsys.allTokens()
		if _, err := pl.CheckRemove(ctx, src, largo.Condition{}, tokens); err != nil {
			return err
		}
		if err := pl.CheckMove(ctx, src, dst); err != nil {
			return err
		}
		if g, ok := fsys.view.(gated); ok {
			if err := g.Gate().Check(ctx, gate.MoveNeeds(fsys.view, in.IsDir), src, in.IsDir); err != nil {
				return err
			}
			if err := g.Gate().Check(ctx, auth.Write, dst, in.IsDir); err != nil {
				return err
			}
		}
		if gate.Has[largo.Renamer](fsys.h.cfg.Store) {
			return nil // the rest is the rename's
		}
	}
	cw, _ := fsys.view.(interface {
		CheckWrite(ctx context.Context, name string, size int64, cond largo.Condition) (largo.Condition, error)
	})
	max := pl.MaxSize()
	var need int64
	err = largo.WalkDir(ctx, fsys.view, src, func(name string, in largo.Info, err error) error {
		if err != nil {
			return err
		}
		if in.IsDir {
			return nil
		}
		if in.Link && !fsys.copying {
			return nil // a move by copies leaves links where they are
		}
		if max > 0 && in.Size > max {
			return fmt.Errorf("%s: %d bytes, limit %d: %w", name, in.Size, max, largo.ErrTooLarge)
		}
		if cw != nil {
			if _, err := cw.CheckWrite(ctx, dst+name[len(src):], in.Size, largo.Condition{}); err != nil {
				return err
			}
		}
		need += in.Size
		return nil
	})
	if err != nil {
		return err
	}
	if fsys.copying {
		// The quotas of the paths where the copy lands, in files as
		// well as bytes: what lands is what a move would land.
		if err := pl.CheckMove(ctx, src, dst); err != nil {
			return err
		}
	}
	// What the destination holds is not taken off: the quotas count a
	// folder's removal at their next pass, not at once.
	return pl.CheckSpace(ctx, dst, need)
}
