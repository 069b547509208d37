package disk

import (
	"os"
	"syscall"
)

// blocking clears the flag open set, once f is known to be a regular
// file: local filesystems ignore it, but a FUSE one may not. The store
// opens files read-only with no other status flag, so the flags are set
// to none in one call, not read first (it runs for every file served).
func blocking(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETFL, 0)
		})
	}
}
