package client

import "testing"

// TestChunkAt: the size of each tus PATCH, with and without checksums,
// the last tailSize bytes alone.
func TestChunkAt(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		off, size int64
		checked   bool
		n         int64
		last      bool
	}{
		{0, 100 * mib, false, 100*mib - tailSize, false},
		{100*mib - tailSize, 100 * mib, false, tailSize, true},
		{0, 100 * mib, true, 64 * mib, false},
		{64 * mib, 100 * mib, true, 36*mib - tailSize, false},
		{0, 3 * mib, true, 3 * mib, true},
		{0, 0, true, 0, true},
		{10, tailSize + 10, false, tailSize, true},
	} {
		n, last := chunkAt(c.off, c.size, c.checked, 64*mib)
		if n != c.n || last != c.last {
			t.Errorf("chunkAt(%d, %d, %v) = %d, %v; want %d, %v", c.off, c.size, c.checked, n, last, c.n, c.last)
		}
	}
}
