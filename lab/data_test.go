package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSizeName(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1GiB", 2<<30 + 1: "2GiB+1", 64 << 20: "64MiB", 5 << 30: "5GiB", 1536: "1KiB+512", 100: "100"} {
		if got := sizeName(n); got != want {
			t.Errorf("sizeName(%d) = %s; want %s", n, got, want)
		}
	}
}

// gzipRatio returns how many times gzip shrinks b.
func gzipRatio(t *testing.T, b []byte) float64 {
	t.Helper()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(b)
	w.Close()
	return float64(len(b)) / float64(z.Len())
}

func TestGeneratedData(t *testing.T) {
	var a, b bytes.Buffer
	if err := writeRandom(&a, 1<<20+3); err != nil {
		t.Fatal(err)
	}
	writeRandom(&b, 1<<20+3)
	if a.Len() != 1<<20+3 || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("random data is not the seeded size and content")
	}
	if r := gzipRatio(t, a.Bytes()); r > 1.01 {
		t.Errorf("random data compresses %.2fx", r)
	}
	var l bytes.Buffer
	if err := writeLog(&l, 4<<20); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 4<<20 {
		t.Fatalf("log of %d bytes", l.Len())
	}
	lines := strings.Split(l.String(), "\n")
	if !strings.HasPrefix(lines[0], "10.") || !strings.Contains(lines[0], `HTTP/1.1" `) || len(lines) < 10000 {
		t.Fatalf("log does not look like an access log: %q", lines[0])
	}
	if r := gzipRatio(t, l.Bytes()); r < 3 || r > 30 {
		t.Errorf("log compresses %.1fx; real logs compress 3x to 30x", r)
	}
}

// TestPrepareData generates the data set into a kept folder, then reuses
// it.
func TestPrepareData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := Config{Size: 4 << 20, Quick: true, DataDir: dir, Progress: io.Discard}
	d, err := prepareData(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := fileSHA(d.random.path)
	if d.random.size != 4<<20 || sum != d.random.sha || d.small != d.random || d.log.size != 4<<20 {
		t.Fatalf("data set %+v", d)
	}
	if st, err := os.Stat(d.warmUp.path); err != nil || st.Size() != warmUpSize || d.warmUp.size != warmUpSize {
		t.Fatalf("warm-up file %+v: %v", d.warmUp, err)
	}
	for i, f := range d.ceiling {
		st, err := os.Stat(f.path)
		if err != nil || st.Size() != ceilingSizes[i] {
			t.Fatalf("ceiling file %s: %v", f.path, err)
		}
	}
	d.cleanup()
	if _, err := os.Stat(d.random.path); err != nil {
		t.Fatal("cleanup removed a kept data folder")
	}
	var progress bytes.Buffer
	cfg.Progress = &progress
	d2, err := prepareData(context.Background(), cfg)
	if err != nil || d2.random.sha != d.random.sha || strings.Contains(progress.String(), "generating") {
		t.Fatalf("second run did not reuse the data: %v\n%s", err, progress.String())
	}
	// A temporary data set goes away.
	cfg.DataDir = ""
	d3, err := prepareData(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d3.cleanup()
	if _, err := os.Stat(d3.dir); !os.IsNotExist(err) {
		t.Fatal("temporary data folder left behind")
	}
}
