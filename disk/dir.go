//go:build unix

package disk

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"largo"
)

var (
	_ largo.DirMaker = (*Store)(nil)
	_ largo.Renamer  = (*Store)(nil)
)

// MakeDir implements largo.DirMaker: one mkdirat in the folder, opened
// following no link, and an fsync of it.
func (s *Store) MakeDir(_ context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("the root: %w", largo.ErrExist)
	}
	dir, elem := split(name)
	pfd, err := s.folder(dir)
	if err != nil {
		return err
	}
	defer closeFd(pfd)
	if err := unix.Mkdirat(pfd, elem, 0o755); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", name, largo.ErrExist)
		}
		return writeErr(err)
	}
	return writeErr0(unix.Fsync(pfd))
}

// Rename implements largo.Renamer: one renameat between the two
// folders, each opened following no link, under the name locks of both
// names, then an fsync of both folders. A link at from is moved, never
// what it leads to; a link at to is replaced.
func (s *Store) Rename(_ context.Context, from, to string) error {
	if from == "" || to == "" {
		return fmt.Errorf("the root: %w", largo.ErrPermission)
	}
	first, second := from, to
	if second < first {
		first, second = second, first
	}
	unlock1 := s.locks.Lock(first)
	defer unlock1()
	unlock2 := s.locks.Lock(second)
	defer unlock2()
	fdir, felem := split(from)
	tdir, telem := split(to)
	fp, err := s.folder(fdir)
	if err != nil {
		return fmt.Errorf("%s: %w", from, largo.ErrNotFound)
	}
	defer closeFd(fp)
	tp, err := s.folder(tdir)
	if err != nil {
		return err
	}
	defer closeFd(tp)
	if st, err := statIn(fp, felem); err != nil || st == nil {
		return fmt.Errorf("%s: %w", from, largo.ErrNotFound)
	}
	if st, err := statIn(tp, telem); err == nil && st != nil && isDir(st) {
		return fmt.Errorf("%s: %w", to, largo.ErrIsDir)
	}
	if err := unix.Renameat(fp, felem, tp, telem); err != nil {
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", to, largo.ErrIsDir)
		}
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s into itself: %w", from, largo.ErrPermission)
		}
		return writeErr(err)
	}
	if err := unix.Fsync(tp); err != nil {
		return writeErr(err)
	}
	return writeErr0(unix.Fsync(fp))
}

// writeErr0 is writeErr, and nil for no error.
func writeErr0(err error) error {
	if err == nil {
		return nil
	}
	return writeErr(err)
}

var _ largo.Copier = (*Store)(nil)

// Copy implements largo.Copier: the bytes of src go into a new file in
// TempDir by the kernel (copy_file_range: no buffer of largo's, and a
// reflink on filesystems that share blocks), and Commit renames it into
// place like any upload.
func (s *Store) Copy(ctx context.Context, name, src string, opt largo.CreateOptions) (largo.Upload, error) {
	p, err := s.hold(name, opt.NoMkdir)
	if err != nil {
		return nil, err
	}
	in, err := s.Open(ctx, src)
	if err != nil {
		p.release()
		if errors.Is(err, largo.ErrIsDir) {
			return nil, fmt.Errorf("%s: not a file: %w", src, largo.ErrIsDir)
		}
		return nil, err
	}
	defer in.Close()
	tmp, f, err := s.newTemp()
	if err != nil {
		p.release()
		return nil, err
	}
	if _, err := io.Copy(f, in.(*file).File); err != nil {
		f.Close()
		s.root.Remove(tmp)
		p.release()
		return nil, writeErr(err)
	}
	return &upload{s: s, at: p, tmp: tmp, opt: opt, f: f}, nil
}
