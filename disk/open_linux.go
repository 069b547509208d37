package disk

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens name for reading, relative to the folder, in one
// system call that refuses every symbolic link on the way and anything
// outside the folder (openat2 with RESOLVE_NO_SYMLINKS and
// RESOLVE_BENEATH): a file so opened is where its name says, which the
// access gate then need not check. It opens nothing (f and err nil) when
// a link is on the way, or the kernel has no openat2: the caller opens
// through os.Root instead, which follows links inside the folder. Other
// failures (a missing file, a file where a folder should be) are those
// os.Root would meet too.
func (s *Store) openDirect(name string) (f *os.File, err error) {
	if s.dirFd < 0 || s.noOpenat2.Load() {
		return nil, nil
	}
	fd, err := unix.Openat2(s.dirFd, osName(name), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), name), nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && s.dirFd >= 0:
		// No openat2 here (or a seccomp filter refuses it): os.Root from
		// now on.
		s.noOpenat2.Store(true)
		return nil, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		return nil, nil
	}
	return nil, &fs.PathError{Op: "openat2", Path: name, Err: err}
}
