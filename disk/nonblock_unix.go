//go:build unix && !linux

package disk

import (
	"os"
	"syscall"
)

// blocking clears the flag open set, once f is known to be a regular
// file: local filesystems ignore it, but a FUSE one may not.
func blocking(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
}
