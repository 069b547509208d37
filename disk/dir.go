package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"syscall"

	"largo"
)

var (
	_ largo.DirMaker = (*Store)(nil)
	_ largo.Renamer  = (*Store)(nil)
)

// MakeDir implements largo.DirMaker: one mkdir through the root, and an
// fsync of the parent folder.
func (s *Store) MakeDir(_ context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("the root: %w", largo.ErrExist)
	}
	if err := s.parentIsDir(name); err != nil {
		return err
	}
	if err := s.root.Mkdir(name, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", name, largo.ErrExist)
		}
		return writeErr(err)
	}
	return s.syncDir(path.Dir(name))
}

// Rename implements largo.Renamer: one rename(2) through the root, under
// the name locks of both names, then an fsync of both folders.
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
	if _, err := s.root.Lstat(from); err != nil {
		return mapErr(err)
	}
	if err := s.parentIsDir(to); err != nil {
		return err
	}
	if fi, err := s.root.Stat(to); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: %w", to, largo.ErrIsDir)
	}
	if err := s.root.Rename(from, to); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOTEMPTY || errno == syscall.EEXIST) {
			return fmt.Errorf("%s: %w", to, largo.ErrIsDir)
		}
		return writeErr(err)
	}
	if err := s.syncDir(path.Dir(to)); err != nil {
		return err
	}
	return s.syncDir(path.Dir(from))
}

// parentIsDir checks that the folder of name exists and is a folder.
func (s *Store) parentIsDir(name string) error {
	dir := path.Dir(name)
	fi, err := s.root.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("folder %s: %w", dir, mapErr(err))
	case !fi.IsDir():
		return fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
	}
	return nil
}

var _ largo.Copier = (*Store)(nil)

// Copy implements largo.Copier: the bytes of src go into a new file in
// TempDir by the kernel (copy_file_range: no buffer of largo's, and a
// reflink on filesystems that share blocks), and Commit renames it into
// place like any upload.
func (s *Store) Copy(_ context.Context, name, src string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkTarget(name, opt); err != nil {
		return nil, err
	}
	in, _, err := s.open(src)
	if err != nil {
		return nil, mapErr(err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a file: %w", src, largo.ErrIsDir)
	}
	blocking(in)
	tmp, f, err := s.newTemp()
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		s.root.Remove(tmp)
		return nil, writeErr(err)
	}
	return &upload{s: s, name: name, tmp: tmp, opt: opt, f: f}, nil
}
