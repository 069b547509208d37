//go:build !linux

package client

import "os"

// allocate makes f size bytes long.
func allocate(f *os.File, size int64) error { return f.Truncate(size) }
