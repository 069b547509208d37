package disk

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"largo"
)

// TestOpenBlocking: a file the store opens is in blocking mode, read-only,
// with no status flag left over from the open.
func TestOpenBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, err := f.(largo.OSFile).OSFile().SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	})
	if errno != 0 {
		t.Fatal(errno)
	}
	if flags&syscall.O_NONBLOCK != 0 || flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&(syscall.O_APPEND|syscall.O_DIRECT|syscall.O_NOATIME) != 0 {
		t.Fatalf("flags %#o after Open", flags)
	}
}
