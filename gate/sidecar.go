package gate

import (
	"context"
	"errors"
	"fmt"

	"largo"
)

// A file NAME.gz, NAME.br or NAME.zst beside a file NAME may be sent to
// clients as NAME's encoding (package sidecar: with --sidecars any,
// whoever wrote it). Writing it needs write on NAME (judge.allows), and
// a drop box, which has that only to create NAME, must not create what
// would stand for NAME either: it never writes a name of a sidecar's form
// while a file of its base name is there. Checked when the write is
// decided (sidecarName) and again once it has landed (Landed), since NAME
// may appear while its bytes arrive; a file that lands before NAME does
// is no encoding of the NAME that comes later (the write pipeline removes
// what a newer NAME would take for its encoding: ingest.Derived).

// sidecarName refuses a drop box's write d of a name of a sidecar's
// form while a file of its base name is there (or a link, which may lead
// to one): an error wrapping largo.ErrSidecarName (409).
func (s *Store) sidecarName(ctx context.Context, d *Decision) error {
	if !d.DropBox() {
		return nil
	}
	base, _, ok := largo.SidecarBase(d.Physical)
	if !ok {
		return nil
	}
	in, err := s.inner.Stat(ctx, base)
	switch {
	case err == nil && !in.IsDir, errors.Is(err, largo.ErrSymlink):
		return fmt.Errorf("%s beside %s: %w", d.Name, base, largo.ErrSidecarName)
	case err == nil, errors.Is(err, largo.ErrNotFound), errors.Is(err, largo.ErrNotDir):
		return nil
	}
	return err
}

// Landed is told by the write pipeline of each file committed through
// the store, as in: a drop box's file of a sidecar's form whose base
// appeared while it was written is removed again (under If-Match of the
// version that landed) and refused, as it would have been at its start.
func (s *Store) Landed(ctx context.Context, name string, in largo.Info) error {
	d, err := s.g.Decide(ctx, OpWrite, name, false)
	if err != nil || !d.DropBox() {
		return nil // decided at its start; only a drop box is judged again
	}
	if err = s.sidecarName(ctx, d); err == nil {
		return nil
	}
	if rm, ok := s.inner.(largo.Remover); ok && in.ETag != "" {
		if rerr := rm.Remove(context.WithoutCancel(ctx), d.Physical, largo.RemoveOptions{Condition: largo.Condition{IfMatch: in.ETag}}); rerr != nil && !errors.Is(rerr, largo.ErrNotFound) {
			s.g.log.Error("a drop box's file that would be taken for another's encoding could not be removed", "name", name, "err", rerr)
		}
	}
	return err
}
