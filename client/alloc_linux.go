package client

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate makes f size bytes long with its blocks reserved, so that a
// full disk shows at the start rather than half-way; where the filesystem
// cannot reserve, it only sets the length.
func allocate(f *os.File, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == size {
		return nil
	}
	if fi.Size() < size {
		err = unix.Fallocate(int(f.Fd()), 0, 0, size)
		if err == nil || !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	return f.Truncate(size)
}
