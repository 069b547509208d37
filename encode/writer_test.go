package encode

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestWriterTakesASlot checks that whole-body compressors share the slots
// of compressed responses, and that what they write decodes.
func TestWriterTakesASlot(t *testing.T) {
	e, err := NewEncoders(Config{MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, ok := e.Writer(&buf, Zstd)
	if !ok {
		t.Fatal("no slot for the first writer")
	}
	if _, ok := e.Writer(io.Discard, Zstd); ok {
		t.Fatal("a second writer past MaxStreams")
	}
	if _, ok := e.Start(nil, Zstd, -1); ok {
		t.Fatal("a response compressed while the writer holds the slot")
	}
	io.Copy(w, bytes.NewReader(bytes.Repeat([]byte("archive "), 10000)))
	if err := w.Close(); err != nil || e.Active() != 0 {
		t.Fatalf("Close: %v, %d active", err, e.Active())
	}
	zr, _ := zstd.NewReader(&buf)
	defer zr.Close()
	if b, err := io.ReadAll(zr); err != nil || len(b) != 80000 {
		t.Fatalf("decoded %d bytes, %v", len(b), err)
	}
	w, _ = e.Writer(io.Discard, Zstd)
	w.Abandon()
	if e.Active() != 0 {
		t.Fatal("Abandon kept the slot")
	}
}
