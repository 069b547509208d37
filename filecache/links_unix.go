//go:build unix

package filecache

import (
	"io/fs"
	"syscall"
)

// oneLink reports whether the file fi describes has one name only.
func oneLink(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}
