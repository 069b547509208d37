//go:build unix

package disk

import (
	"fmt"
	"io/fs"
	"syscall"
)

// etag is a strong validator from the inode, the size and the modification
// time in nanoseconds: a replaced file (new inode) or a rewritten one (new
// size or time) gets a new ETag.
func etag(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf(`"%x-%x-%x"`, ino, fi.Size(), fi.ModTime().UnixNano())
}
