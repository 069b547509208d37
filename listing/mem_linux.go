package listing

import "golang.org/x/sys/unix"

// alloc returns n bytes of zeroed memory mapped for this listing alone,
// outside the Go heap: the collector neither scans it nor counts it, so
// the memory a listing holds is what its budget says, not twice that (a
// heap grows to twice what is live before it is collected). It falls
// back to the heap if the kernel refuses.
func alloc(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
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
