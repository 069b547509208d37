//go:build !linux

package disk

import "os"

const writebackEvery = 8 << 20

// startWriteback does nothing where the kernel offers no way to start
// writing a range early; the fsync at commit does all the work.
func startWriteback(*os.File, int64, int64) {}
