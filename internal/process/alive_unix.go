//go:build unix

package process

import (
	"errors"
	"syscall"
)

// Alive reports whether the process pid exists on this machine (EPERM:
// it exists, owned by another user).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Known reports whether Alive can tell.
const Known = true
