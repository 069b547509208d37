package disk

import (
	"errors"

	"golang.org/x/sys/unix"
)

// oPath opens a name as a place only; statFlags opens a name only to
// look at it, with no read permission needed.
const (
	oPath     = unix.O_PATH
	statFlags = unix.O_PATH
)

// openat2 opens name beneath the folder in one system call that follows
// no symbolic link (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS). ok is false when
// the kernel has no openat2 (or a seccomp filter refuses it): the caller
// walks the name instead, from then on.
func (s *Store) openat2(name string, flags int) (fd int, ok bool, err error) {
	if s.noOpenat2.Load() {
		return -1, false, nil
	}
	p := name
	if p == "" {
		p = "."
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 8 {
		fd, err = unix.Openat2(s.dirFd, p, &how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			break
		}
		// A rename elsewhere in the filesystem raced the lookup: again.
	}
	switch {
	case err == nil:
		return fd, true, nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		s.noOpenat2.Store(true)
		return -1, false, nil
	case errors.Is(err, unix.EAGAIN):
		return -1, false, nil // walk instead, this once
	}
	return -1, true, atErr(name, err)
}
