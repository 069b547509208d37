package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropStartupPages lets go of the pages of largo's own executable that
// only start-up touched. Go runs the initialisers of every package the
// binary holds, and each page fault on the executable maps its neighbours
// too (the kernel's fault-around), so after start-up most of the code and
// read-only data of a 30 MiB binary is counted as resident, although a
// serving process uses a fraction of it. The pages are clean copies of the
// file: dropping them from the process's page tables costs nothing, and
// the kernel maps back, from its page cache, whatever is used again.
// Only read-only mappings are touched; writable ones hold live data.
func dropStartupPages() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}

// resetPeak resets the process's peak resident size, VmHWM in
// /proc/self/status, to its current size.
func resetPeak() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
