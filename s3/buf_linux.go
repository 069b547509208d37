package s3

import "syscall"

// newPartBuf returns an empty buffer of size bytes outside the Go heap: an
// anonymous mapping, of which only the pages written count in the
// process's memory. The garbage collector neither scans it nor counts it
// when it sizes the heap (which may grow to twice what is live before a
// collection), so part buffers cost what the documented formula says.
// Every buffer must go back through freePartBuf.
func newPartBuf(size int64) []byte {
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, 0, size)
	}
	return b[:0]
}

// freePartBuf gives a buffer of newPartBuf back to the system. Nothing may
// read it afterwards (see partReader).
func freePartBuf(b []byte) {
	if cap(b) > 0 {
		syscall.Munmap(b[:cap(b)])
	}
}
