//go:build unix

package disk

import (
	"io/fs"
	"strconv"
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
	return etagOf(ino, fi.Size(), fi.ModTime().UnixNano())
}

// etagOf is etag of what a stat told: the inode, the size and the
// modification time in nanoseconds.
func etagOf(ino uint64, size, mtime int64) string {
	// What fmt.Sprintf(`"%x-%x-%x"`, ...) writes, in one allocation: it is
	// made for every file opened.
	var b [3 + 3*17]byte
	e := append(b[:0], '"')
	e = strconv.AppendUint(e, ino, 16)
	e = append(e, '-')
	e = strconv.AppendInt(e, size, 16)
	e = append(e, '-')
	e = strconv.AppendInt(e, mtime, 16)
	return string(append(e, '"'))
}
