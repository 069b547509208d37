//go:build unix

package disk

import (
	"errors"
	"os"
	"syscall"
)

// alive reports whether the process pid may still be writing: it is this
// process, or one that exists (EPERM: it exists, owned by another user).
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
