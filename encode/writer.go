package encode

import (
	"errors"
	"io"
)

// Writer is a compressor for a body that is compressed as a whole, as a
// tar.zst archive is (its media type says so, not a Content-Encoding):
// a pooled encoder that holds one of the Encoders' slots, the same slots
// compressed responses take, so that every compressor in the process
// counts against the one bound. It is used by one goroutine.
type Writer struct {
	encs   *Encoders
	coding Coding
	s      *stream
	done   bool
}

var _ io.WriteCloser = (*Writer)(nil)

// Writer returns a compressor in coding c writing to w, if a slot is
// free: false when MaxStreams compressors are running already, for the
// caller to refuse rather than wait. Close ends the stream; Abandon, after
// a failure, frees the slot without ending it.
func (e *Encoders) Writer(w io.Writer, c Coding) (*Writer, bool) {
	if c.index() < 0 || !e.acquire() {
		return nil, false
	}
	s, err := e.get(c, w)
	if err != nil {
		e.release()
		return nil, false
	}
	return &Writer{encs: e, coding: c, s: s}, true
}

// Write compresses p.
func (w *Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("encode: write after Close")
	}
	return w.s.Write(p)
}

// ReadFrom compresses what r yields; zstd reads straight into its block
// buffer.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	if w.done {
		return 0, errors.New("encode: write after Close")
	}
	if rf, ok := w.s.enc.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return copyBuffered(w.s, r)
}

// Close ends the compressed stream, returns the encoder to its pool and
// frees the slot. It is idempotent.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	defer w.encs.release()
	if err := w.s.Close(); err != nil {
		return err // an encoder that failed is not pooled again
	}
	w.encs.put(w.coding, w.s)
	return nil
}

// Abandon frees the slot without ending the stream, after a failure: the
// encoder, in an unknown state, is dropped. It does nothing after Close.
func (w *Writer) Abandon() {
	if !w.done {
		w.done = true
		w.encs.release()
	}
}
