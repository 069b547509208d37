package disk

import (
	"context"
	"errors"
	"fmt"
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
