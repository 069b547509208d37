//go:build unix

package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"largo"
)

// A store acts on physical names (what largo.Resolver returns, and what
// the access gate judged), so it follows no symbolic link: every name is
// opened beneath the folder's descriptor with no link allowed on the way
// or at its end (openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS on Linux,
// element by element with O_NOFOLLOW elsewhere). A link made since the
// name was judged fails the call with largo.ErrSymlink, and the gate
// decides again; it never leads the call somewhere that was not judged.

// dirFlags opens a folder to act in it: to make, rename and remove its
// entries, to list and to fsync it.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK

// beneath opens the physical name ("" is the folder itself) beneath the
// store's folder with flags, following no symbolic link. A link on the
// way or at the end is an error wrapping largo.ErrSymlink.
func (s *Store) beneath(name string, flags int) (int, error) {
	if fd, ok, err := s.openat2(name, flags); ok {
		return fd, err
	}
	return s.walk(name, flags)
}

// walk is beneath element by element, for a kernel without openat2:
// each folder on the way opened with O_NOFOLLOW relative to the last.
func (s *Store) walk(name string, flags int) (int, error) {
	if name == "" {
		fd, err := unix.Openat(s.dirFd, ".", flags|unix.O_CLOEXEC, 0)
		return fd, atErr(name, err)
	}
	dir, owned := s.dirFd, false
	for {
		elem, rest, more := strings.Cut(name, "/")
		f := dirFlags
		if !more {
			f = flags
		}
		fd, err := unix.Openat(dir, elem, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if owned {
			unix.Close(dir)
		}
		if err != nil {
			return -1, atErr(name, err)
		}
		if !more {
			if flags&oPath != 0 {
				// O_PATH|O_NOFOLLOW opens a link itself: refuse it as
				// openat2 would.
				var st unix.Stat_t
				if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					unix.Close(fd)
					return -1, atErr(name, unix.ELOOP)
				}
			}
			return fd, nil
		}
		dir, owned, name = fd, true, rest
	}
}

// atErr wraps an error of a system call on name in the largo error kind
// it means; a symbolic link met is largo.ErrSymlink (and ErrNotFound, to
// a caller that does not decide again).
func atErr(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: %w: %w", name, largo.ErrSymlink, largo.ErrNotFound)
	case errors.Is(err, unix.EXDEV):
		// Beneath refused a way out, which only a link could take.
		return fmt.Errorf("%s: leads out of the folder: %w", name, largo.ErrNotFound)
	}
	return mapErr(&fs.PathError{Op: "open", Path: name, Err: err})
}

// stat returns the metadata of the physical name, not following a link
// at its end (a link there is largo.ErrSymlink): one fstatat for a name
// in the folder itself, an open beneath the folder and an fstat for any
// other.
func (s *Store) stat(name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if name != "" && !strings.Contains(name, "/") {
		if err := unix.Fstatat(s.dirFd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, atErr(name, err)
		}
	} else {
		fd, err := s.beneath(name, statFlags)
		if err != nil {
			return nil, err
		}
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, atErr(name, err)
		}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, atErr(name, unix.ELOOP)
	}
	return &st, nil
}

// statIn returns the metadata of the entry elem of the open folder dir,
// not following a link: nil with no error when there is none.
func statIn(dir int, elem string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, elem, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, atErr(elem, err)
	}
	return &st, nil
}

// split returns the folder of a physical name ("" for the root) and its
// last element.
func split(name string) (dir, elem string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// isDir, isReg and isLink tell the type of what st describes.
func isDir(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isReg(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFREG }
func isLink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }

// infoStat builds the metadata of name from st.
func infoStat(name string, st *unix.Stat_t) largo.Info {
	in := largo.Info{
		Name:    path.Base("/" + name),
		ModTime: time.Unix(st.Mtim.Unix()),
		IsDir:   isDir(st),
	}
	if name == "" {
		in.Name = ""
	}
	if !in.IsDir {
		in.Size = st.Size
		in.ETag = etagOf(uint64(st.Ino), st.Size, st.Mtim.Nano())
	}
	return in
}

// closeFd closes a descriptor whose close can fail only harmlessly (it
// was opened for reading or as a path).
func closeFd(fd int) { unix.Close(fd) }
