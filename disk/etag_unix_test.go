//go:build unix

package disk

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestETag checks the hand-built validator against the format it stands
// for, on real files with ordinary, zero, old (negative) and far modification
// times and sizes.
func TestETag(t *testing.T) {
	dir := t.TempDir()
	for i, tt := range []struct {
		size int64
		mod  time.Time
	}{
		{0, time.Unix(0, 0)},
		{4096, time.Now()},
		{1 << 40, time.Date(1901, 1, 1, 0, 0, 0, 7, time.UTC)},
		{12345, time.Date(2200, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	} {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, tt.size); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, tt.mod, tt.mod); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"%x-%x-%x"`, uint64(fi.Sys().(*syscall.Stat_t).Ino), fi.Size(), fi.ModTime().UnixNano())
		if got := etag(fi); got != want {
			t.Errorf("etag of %d bytes at %v = %s, want %s", tt.size, tt.mod, got, want)
		}
	}
}
