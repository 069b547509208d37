package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"syscall"
)

// pathErrText is the short reason of a file system error, without the
// path the message around it already names.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// netErrText is the short reason of a listen error.
func netErrText(err error) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "address already in use"
	case errors.Is(err, syscall.EACCES):
		return "permission denied"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "address not available on this machine"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err.Error()
		}
		return oe.Err.Error()
	}
	return err.Error()
}
