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
// decided (checkNew) and again once it has landed (Landed), since NAME
// may appear while its bytes arrive; a file that lands before NAME does
// is no encoding of the NAME that comes later (the write pipeline removes
// what a newer NAME would take for its encoding: ingest.Derived).

// checkSidecarName refuses a drop box's write of name when name has a
// sidecar's form and a file of its base name is there: an error wrapping
// largo.ErrSidecarName (409).
func (s *Store) checkSidecarName(ctx context.Context, name string) error {
	base, _, ok := largo.SidecarBase(name)
	if !ok || s.g.DropBox(ctx) == nil {
		return nil
	}
	in, err := s.inner.Stat(ctx, base)
	switch {
	case err == nil && !in.IsDir:
		return fmt.Errorf("%s beside %s: %w", name, base, largo.ErrSidecarName)
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
	err := s.checkSidecarName(ctx, name)
	if err == nil {
		return nil
	}
	if rm, ok := s.inner.(largo.Remover); ok && in.ETag != "" {
		if rerr := rm.Remove(context.WithoutCancel(ctx), name, largo.RemoveOptions{Condition: largo.Condition{IfMatch: in.ETag}}); rerr != nil && !errors.Is(rerr, largo.ErrNotFound) {
			s.g.log.Error("a drop box's file that would be taken for another's encoding could not be removed", "name", name, "err", rerr)
		}
	}
	return err
}
