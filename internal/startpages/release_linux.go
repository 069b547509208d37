package startpages

import (
	"os"
	"reflect"

	"golang.org/x/sys/unix"
)

// Release unmaps the resident pages of the executable's private read-only
// mappings that hold no page of their own, and returns how many bytes were
// resident in them. An error leaves the process as it was, but for the
// mappings released before it.
func Release() (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	ms, err := parseSmaps(f)
	f.Close()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range ofExecutable(ms, uint64(reflect.ValueOf(Release).Pointer())) {
		if m.rss == 0 {
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.lo), uintptr(m.hi-m.lo), unix.MADV_DONTNEED)
		if e != 0 {
			return released, os.NewSyscallError("madvise", e)
		}
		released += int64(m.rss)
	}
	return released, nil
}
