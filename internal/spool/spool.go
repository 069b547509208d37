// Package spool writes an upload's bytes the way largo's write pipeline
// and stores want it: Writer hashes each large buffer on a second
// goroutine while the store takes it (each costs about as much as the
// other, so the hash no longer adds to the transfer's time), and
// Writeback starts a file's writeback every few MiB, so that the disk
// works while the rest arrives and the final fsync has little left to do.
package spool

import (
	"hash"
	"io"
	"os"
)

// parallelMin is the smallest buffer whose hashing is worth handing to the
// other goroutine; writebackEvery is how many bytes are written between
// two requests to start the file's writeback.
const (
	parallelMin    = 64 << 10
	writebackEvery = 8 << 20
)

// Writer writes to w and hashes into h everything it is given. It is used
// by one goroutine at a time and must be closed.
type Writer struct {
	w io.Writer
	h hash.Hash

	in   chan []byte // to the hashing goroutine, started on first need
	done chan struct{}
}

// New returns a Writer to w that hashes into h.
func New(w io.Writer, h hash.Hash) *Writer {
	return &Writer{w: w, h: h}
}

// Write writes p and hashes all of it, even when the write fails or falls
// short: a caller that goes on after an error must drop the hash.
func (s *Writer) Write(p []byte) (int, error) {
	var n int
	var err error
	if len(p) >= parallelMin {
		if s.in == nil {
			s.start()
		}
		s.in <- p
		n, err = s.w.Write(p)
		<-s.done
	} else {
		n, err = s.w.Write(p)
		s.h.Write(p)
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}

// start runs the hashing goroutine: it takes one buffer at a time, and the
// writer may reuse the buffer once done answers.
func (s *Writer) start() {
	s.in, s.done = make(chan []byte), make(chan struct{})
	go func(in <-chan []byte, done chan<- struct{}) {
		for p := range in {
			s.h.Write(p)
			done <- struct{}{}
		}
	}(s.in, s.done)
}

// Close ends the hashing goroutine. The hash stays readable; the Writer
// must not be written to again.
func (s *Writer) Close() {
	if s.in != nil {
		close(s.in)
		s.in = nil
	}
}

// Writeback writes to a file and starts the file's writeback each time
// writebackEvery more bytes went in. It is used by one goroutine at a
// time.
type Writeback struct {
	f         *os.File
	unflushed int64
}

// NewWriteback returns a Writeback to f.
func NewWriteback(f *os.File) *Writeback { return &Writeback{f: f} }

func (w *Writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if w.unflushed += int64(n); w.unflushed >= writebackEvery {
		startWriteback(w.f)
		w.unflushed = 0
	}
	return n, err
}
