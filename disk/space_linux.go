package disk

import (
	"context"
	"math"
	"syscall"
)

// Free implements largo.SpaceReporter: the bytes an unprivileged process
// may still write on the filesystem of the served folder (name does not
// matter: the temporary files live on the same filesystem).
func (s *Store) Free(context.Context, string) (int64, error) {
	d, err := s.root.Open(".")
	if err != nil {
		return 0, mapErr(err)
	}
	defer d.Close()
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(d.Fd()), &st); err != nil {
		return 0, err
	}
	free := st.Bavail * uint64(st.Bsize)
	if st.Bsize > 0 && st.Bavail > math.MaxInt64/uint64(st.Bsize) {
		return math.MaxInt64, nil
	}
	return int64(free), nil
}
