//go:build !linux

package listing

// alloc returns n bytes of zeroed memory.
func alloc(n int) []byte { return make([]byte, n) }

// free gives back memory from alloc.
func free([]byte) {}
