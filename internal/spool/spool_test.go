package spool

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// TestWriter writes small and large buffers, reusing one buffer as callers
// do, to a file past the writeback step: the file and the hash must both
// hold exactly the bytes given.
func TestWriter(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	w := New(f, h)
	var want bytes.Buffer
	buf := make([]byte, 1<<20)
	for i := range 12 {
		size := len(buf)
		if i%3 == 0 {
			size = 100 // below the parallel threshold
		}
		for j := range buf[:size] {
			buf[j] = byte(i*7 + j)
		}
		if n, err := w.Write(buf[:size]); n != size || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		want.Write(buf[:size])
	}
	w.Close()
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes, not the %d written", len(got), want.Len())
	}
	if sum := sha256.Sum256(want.Bytes()); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Error("the hash differs from the bytes written")
	}
}

// shortWriter takes half of every buffer.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestShortWrite(t *testing.T) {
	w := New(shortWriter{}, sha256.New())
	defer w.Close()
	if n, err := w.Write(make([]byte, 1<<20)); n != 1<<19 || err == nil {
		t.Errorf("short write: %d, %v; want half and an error", n, err)
	}
}
