//go:build unix && !linux

package disk

import (
	"context"
	"fmt"

	"largo"
)

// Free implements largo.SpaceReporter; on this system the free space is
// not known, and writes run until the filesystem reports it full.
func (s *Store) Free(context.Context, string) (int64, error) {
	return 0, fmt.Errorf("free space: %w", largo.ErrUnsupported)
}
