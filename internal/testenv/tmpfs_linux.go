package testenv

import (
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount's size option: "48m") on dir,
// unmounted when the test ends; where the test may not mount (not root),
// it ends t through Missing, saying why the test needs it.
func Tmpfs(t testing.TB, dir, size, why string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		Missing(t, "cannot mount a tmpfs (%v): run as root %s", err, why)
		return
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
}
