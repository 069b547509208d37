package listing

import "golang.org/x/sys/unix"

// alloc returns n bytes of zeroed memory mapped for this listing alone,
// outside the Go heap: the collector neither scans it nor counts it, so
// the memory a listing holds is what its budget says, not twice that (a
// heap grows to twice what is live before it is collected). The mapping
// is address space only until its pages are written, so a Sorter
// reserves the most it may use at once and touches it as it grows: one
// mapping to make and one to remove, however many chunks it fills (each
// removal costs every core a TLB flush, which made a mapping per chunk
// cost more than the sorting). It falls back to the heap if the kernel
// refuses.
func alloc(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// free gives back memory from alloc; b must not be used after.
func free(b []byte) {
	if err := unix.Munmap(b[:cap(b)]); err != nil {
		_ = err // heap memory from the fallback: the collector takes it
	}
}
