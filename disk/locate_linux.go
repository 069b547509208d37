package disk

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"largo"
)

// Location implements largo.Located: the name the file was opened by when
// no link was on the way (openDirect), else the path the kernel gives the
// open descriptor (/proc/self/fd), less the folder's own.
func (f *file) Location() (string, error) {
	if f.direct {
		return f.name, nil
	}
	rc, err := f.File.SyscallConn()
	if err != nil {
		return "", err
	}
	var p string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil {
		return "", err
	}
	if rerr != nil {
		return "", fmt.Errorf("%w: %w", largo.ErrUnsupported, rerr)
	}
	name, ok := strings.CutPrefix(p, f.root+"/")
	if !ok {
		return "", fmt.Errorf("%s: opened outside the folder: %w", f.info.Name, largo.ErrUnsupported)
	}
	return name, nil
}
