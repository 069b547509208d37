//go:build !unix

package process

// Alive reports whether the process pid may exist: where that cannot be
// asked, every process may.
func Alive(int) bool { return true }

// Known reports whether Alive can tell.
const Known = false
