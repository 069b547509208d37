package resumable

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// TestTeeWriteTo checks that the pipelined copy hashes exactly what it
// passes on, whatever the sizes the source reads in.
func TestTeeWriteTo(t *testing.T) {
	data := make([]byte, 3*teeBuffer+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for name, src := range map[string]io.Reader{
		"whole":   bytes.NewReader(data),
		"onebyte": iotest.OneByteReader(bytes.NewReader(data[:5000])),
		"half":    iotest.HalfReader(bytes.NewReader(data)),
	} {
		want := data
		if name == "onebyte" {
			want = data[:5000]
		}
		tee := &countingTee{r: src, h: sha256.New()}
		var out bytes.Buffer
		n, err := io.Copy(&out, tee)
		if err != nil || n != int64(len(want)) || tee.n != n || !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("%s: copied %d (%v), hashed %d; want %d", name, n, err, tee.n, len(want))
		}
		if sum := sha256.Sum256(want); !bytes.Equal(tee.h.Sum(nil), sum[:]) {
			t.Errorf("%s: wrong sum", name)
		}
	}
}

// shortWriter takes at most left bytes, then fails.
type shortWriter struct{ left int }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errors.New("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

// TestTeeShortWrite checks that a failed write leaves a hash count that
// differs from the bytes written, so that the hash is dropped.
func TestTeeShortWrite(t *testing.T) {
	data := make([]byte, 2*teeBuffer)
	tee := &countingTee{r: bytes.NewReader(data), h: sha256.New()}
	n, err := io.Copy(&shortWriter{left: teeBuffer + 100}, tee)
	if err == nil || n != teeBuffer+100 {
		t.Fatalf("copied %d (%v); want %d and an error", n, err, teeBuffer+100)
	}
	if tee.n == n {
		t.Errorf("hash count %d equals the bytes written: a hash of unwritten bytes would be kept", tee.n)
	}
}
