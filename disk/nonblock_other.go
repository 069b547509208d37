//go:build !unix

package disk

import "os"

func blocking(*os.File) {}
