package gate

import (
	"io"
	"os"
	"strings"
	"testing"

	"largo"
)

// sliceFile is a largo.SliceFile of one slice, its bytes in f.
type sliceFile struct {
	io.ReadSeekCloser
	f *os.File
}

func (s sliceFile) Info() largo.Info         { return largo.Info{Name: "phys"} }
func (s sliceFile) Slice() (*os.File, error) { return s.f, nil }

// TestNamedKeepsSlices checks that a file opened under its physical name
// keeps what sendfile needs: its slices.
func TestNamedKeepsSlices(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "slice")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := sliceFile{ReadSeekCloser: struct {
		io.ReadSeeker
		io.Closer
	}{strings.NewReader("x"), io.NopCloser(nil)}, f: f}
	n := named(src, largo.Info{Name: "spelled"})
	sf, ok := n.(largo.SliceFile)
	if !ok {
		t.Fatalf("a slice file opened under its physical name is a %T, no largo.SliceFile", n)
	}
	if got, err := sf.Slice(); got != f || err != nil {
		t.Errorf("Slice() = %v, %v: not the file's slice", got, err)
	}
	if n.Info().Name != "spelled" {
		t.Errorf("named as %q", n.Info().Name)
	}
}
