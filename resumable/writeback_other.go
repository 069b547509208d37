//go:build !linux

package resumable

import "os"

func startWriteback(*os.File) {}
