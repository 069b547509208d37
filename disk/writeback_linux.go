package disk

import (
	"os"

	"golang.org/x/sys/unix"
)

// writebackEvery is how many bytes an upload writes between two requests
// to the kernel to start writing them to the disk.
const writebackEvery = 8 << 20

// startWriteback asks the kernel to start writing the n bytes at off of f
// to the disk now, without waiting for them: the disk works while the
// rest of the body arrives, the final fsync has little left to do, and an
// upload never piles up gigabytes of dirty pages. A failure only loses
// the head start.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
