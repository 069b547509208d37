//go:build !unix

package disk

import "os"

// flock is the lock of other processes, which this system does not give:
// only the store's own mutex serialises the swaps, within one process.
func flock(*os.File) error { return nil }

func unflock(*os.File) error { return nil }
