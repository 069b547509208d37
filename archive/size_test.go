package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/internal/testenv"
	"largo/listing"
)

// flatStore is a folder of n small files, "f00000" and on, each holding
// its own name, plus any extra entries; it counts the files it opens.
type flatStore struct {
	n      int
	extra  []largo.Info
	opened int
}

var flatTime = time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)

func (s *flatStore) info(i int) largo.Info {
	name := fmt.Sprintf("f%05d", i)
	return largo.Info{Name: name, Size: int64(len(name)), ModTime: flatTime, ETag: `"` + name + `"`}
}

func (s *flatStore) Stat(_ context.Context, name string) (largo.Info, error) {
	if name == "" {
		return largo.Info{IsDir: true, ModTime: flatTime}, nil
	}
	return largo.Info{}, largo.ErrNotFound
}

func (s *flatStore) List(_ context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		for _, e := range s.extra {
			if !yield(e, nil) {
				return
			}
		}
		for i := range s.n {
			if !yield(s.info(i), nil) {
				return
			}
		}
	}
}

func (s *flatStore) Open(_ context.Context, name string) (largo.File, error) {
	s.opened++
	var i int
	if _, err := fmt.Sscanf(name, "f%05d", &i); err != nil || i >= s.n {
		return nil, largo.ErrNotFound
	}
	return &memFile{Reader: strings.NewReader(name), info: s.info(i)}, nil
}

type memFile struct {
	*strings.Reader
	info largo.Info
}

func (f *memFile) Close() error     { return nil }
func (f *memFile) Info() largo.Info { return f.info }

// TestSizeByArithmetic checks, on an archive of 70,000 files (past what
// the 16-bit counts of a zip hold, so with zip64 end records), that Size
// opens no file and gives exactly the length Write writes, and that Go's
// zip reader and unzip -t accept the result.
func TestSizeByArithmetic(t *testing.T) {
	ctx := context.Background()
	for _, f := range []Format{Zip, Tar} {
		t.Run(string(f), func(t *testing.T) {
			s := &flatStore{n: 70_000}
			entries := Walk(ctx, s, "", "top", listing.Config{Dir: t.TempDir()}, nil)
			p, err := Measure(ctx, f, entries, Options{})
			if err != nil {
				t.Fatal(err)
			}
			size := p.Size
			if s.opened != 0 {
				t.Fatalf("Size opened %d files", s.opened)
			}
			var buf bytes.Buffer
			if err := Write(ctx, &buf, p, entries, s, Options{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if int64(buf.Len()) != size || s.opened != s.n {
				t.Fatalf("Size %d, wrote %d, opened %d files", size, buf.Len(), s.opened)
			}
			if f != Zip {
				return
			}
			zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if len(zr.File) != s.n+1 {
				t.Fatalf("%d entries in the zip", len(zr.File))
			}
			for _, zf := range []*zip.File{zr.File[1], zr.File[len(zr.File)-1]} {
				rc, _ := zf.Open()
				b, err := io.ReadAll(rc) // checks the CRC
				if err != nil || "top/"+string(b) != zf.Name || !zf.Modified.Equal(flatTime) || zf.Mode() != 0o644 {
					t.Errorf("%s: %q, %v, %v, %v", zf.Name, b, err, zf.Modified, zf.Mode())
				}
			}
			// Info-ZIP's unzip checks the file too.
			unzip := testenv.Program(t, "unzip")
			zp := filepath.Join(t.TempDir(), "a.zip")
			os.WriteFile(zp, buf.Bytes(), 0o644)
			if out, err := exec.Command(unzip, "-tq", zp).CombinedOutput(); err != nil {
				t.Errorf("unzip -t: %v\n%s", err, out)
			}
		})
	}
}

// TestSizeHugeAndCancelled sizes a folder of files of a petabyte each:
// arithmetic, so no file is opened, zip64 fields where 32 bits no longer
// hold a size or an offset, and a done context stops it.
func TestSizeHugeAndCancelled(t *testing.T) {
	huge := []largo.Info{{Name: "a-huge", Size: 1 << 50, ModTime: flatTime, ETag: `"h"`}, {Name: "b-huge", Size: 1 << 50, ModTime: flatTime, ETag: `"h"`}}
	s := &flatStore{n: 3, extra: huge}
	ctx := context.Background()
	walk := Walk(ctx, s, "", "top", listing.Config{}, nil)
	zp, err := Measure(ctx, Zip, walk, Options{})
	z := zp.Size
	if err != nil || s.opened != 0 {
		t.Fatalf("zip: %v, opened %d", err, s.opened)
	}
	// Local header (30+name+9) and 24-byte descriptor per file, the
	// folder's header; central records (46+name+9, +28 of zip64 for the
	// huge ones and those past them); zip64 end records, end record.
	local := int64(30+4+9) + 2*(30+10+9+24) + 3*(30+10+9+16)
	central := int64(46+4+9) + 2*(46+10+9+28) + 3*(46+10+9+28)
	want := local + 2<<50 + 3*6 + central + 56 + 20 + 22
	if z != want {
		t.Errorf("zip of two 1 PiB files: %d; want %d", z, want)
	}
	tp, err := Measure(ctx, Tar, walk, Options{})
	tr := tp.Size
	if err != nil || tr < 2<<50 {
		t.Errorf("tar: %d, %v", tr, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Measure(done, Zip, Walk(done, s, "", "top", listing.Config{}, nil), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
