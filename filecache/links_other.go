//go:build !unix

package filecache

import "io/fs"

// oneLink reports that the names of a file are not known here.
func oneLink(fs.FileInfo) bool { return false }
