//go:build unix

package disk

import (
	"os"
	"syscall"
)

// flock takes an exclusive lock of f that other processes (and other
// descriptors of this one) wait for; unflock releases it.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unflock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
