//go:build !unix

package disk

import (
	"fmt"
	"io/fs"
)

// etag is a strong validator from the size and the modification time.
func etag(fi fs.FileInfo) string {
	return fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano())
}
