package encode

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// ErrShortBody is the error of a compressed response whose source ended
// before the length it was started with: the file shrank while it was
// being sent. The stream is left unfinished, so that the client sees a
// broken transfer rather than a complete-looking short file.
var ErrShortBody = errors.New("source ended before its length")

// Response is an http.ResponseWriter that compresses the body of a 200
// response on its way to the wrapped writer, in one coding. Whether it
// compresses is decided when the header is written: a 200 whose
// Content-Encoding header names the Response's coding is compressed;
// anything else (a 304, a 412, an error page that removed the header)
// passes through untouched. The compressor writes straight into the
// wrapped writer, in small pieces as the client takes them, so write
// deadlines and backpressure work as for any body, and no more than the
// compressor's window is ever held.
//
// A Response holds one of the Encoders' slots from Start until Close, and
// an encoder from the first body byte until Close. Like any
// ResponseWriter it is used by one goroutine.
type Response struct {
	rw      http.ResponseWriter
	encs    *Encoders
	coding  Coding
	want    int64 // body length before compression; -1 unknown
	in      int64 // bytes taken in
	enc     *stream
	state   int8 // pending, compressing or passing
	started bool // the caller began a body (Write or ReadFrom was called)
	closed  bool
	err     error
}

const (
	pending int8 = iota
	compressing
	passing
)

var (
	_ http.ResponseWriter = (*Response)(nil)
	_ http.Flusher        = (*Response)(nil)
	_ io.ReaderFrom       = (*Response)(nil)
)

// Start begins a compressed response in coding c on w for a body of size
// bytes (-1 when unknown), if a slot is free. It returns false when
// MaxStreams responses are compressing already: the caller then sends the
// body uncompressed instead of waiting. The caller sets Content-Encoding
// (and the ETag and Vary that go with it) on w's header, sends the body
// through the Response, and must call Close.
func (e *Encoders) Start(w http.ResponseWriter, c Coding, size int64) (*Response, bool) {
	if c.index() < 0 || !e.acquire() {
		return nil, false
	}
	return &Response{rw: w, encs: e, coding: c, want: size}, true
}

// Header implements http.ResponseWriter.
func (r *Response) Header() http.Header { return r.rw.Header() }

// WriteHeader implements http.ResponseWriter, and decides whether the body
// is compressed.
func (r *Response) WriteHeader(code int) {
	if r.state == pending && code >= 200 {
		r.state = passing
		if code == http.StatusOK && r.rw.Header().Get("Content-Encoding") == string(r.coding) {
			r.state = compressing
			r.rw.Header().Del("Content-Length")
		} else if code >= 300 {
			// Not the compressed representation: a 412 or an error page.
			r.rw.Header().Del("Content-Encoding")
		}
	}
	r.rw.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (r *Response) Write(p []byte) (int, error) {
	if err := r.begin(); err != nil {
		return 0, err
	}
	if r.state == passing {
		return r.rw.Write(p)
	}
	n, err := r.enc.Write(p)
	r.in += int64(n)
	if err != nil {
		r.fail(err)
	}
	return n, err
}

// ReadFrom implements io.ReaderFrom. When passing through it hands src to
// the wrapped writer's ReadFrom, so an uncompressed file keeps sendfile.
func (r *Response) ReadFrom(src io.Reader) (int64, error) {
	if err := r.begin(); err != nil {
		return 0, err
	}
	if r.state == passing {
		if rf, ok := r.rw.(io.ReaderFrom); ok {
			return rf.ReadFrom(src)
		}
		return copyBuffered(r.rw, src)
	}
	var n int64
	var err error
	if rf, ok := r.enc.enc.(io.ReaderFrom); ok {
		// zstd reads straight into its block buffer: no copy.
		n, err = rf.ReadFrom(src)
	} else {
		n, err = copyBuffered(r.enc, src)
	}
	r.in += n
	if err != nil {
		r.fail(err)
	}
	return n, err
}

// begin writes the header if needed and fetches the encoder.
func (r *Response) begin() error {
	if r.err != nil {
		return r.err
	}
	if r.closed {
		return errors.New("write after Close")
	}
	r.started = true
	if r.state == pending {
		r.WriteHeader(http.StatusOK)
	}
	if r.state == compressing && r.enc == nil {
		enc, err := r.encs.get(r.coding, r.rw)
		if err != nil {
			r.fail(err)
			return err
		}
		r.enc = enc
	}
	return nil
}

// Flush implements http.Flusher: it flushes the compressor, then the
// wrapped writer.
func (r *Response) Flush() {
	if r.enc != nil && r.err == nil {
		if err := r.enc.Flush(); err != nil {
			r.fail(err)
			return
		}
	}
	if f, ok := r.rw.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (r *Response) Unwrap() http.ResponseWriter { return r.rw }

// Compressing reports whether the body is being compressed.
func (r *Response) Compressing() bool { return r.state == compressing }

// In returns the number of body bytes taken in, before compression.
func (r *Response) In() int64 { return r.in }

// Abandon releases the response's compression slot without writing
// anything more, for a response cut short (a panic, an abort): its
// encoder, whose state is unknown, is dropped. It does nothing after
// Close.
func (r *Response) Abandon() {
	if r.closed {
		return
	}
	r.closed = true
	r.enc = nil
	r.encs.release()
}

// Close ends the response: it finishes the compressed stream (its last
// block and checksum), returns the encoder to the pool and frees the
// slot. It returns ErrShortBody, and leaves the stream unfinished, when
// the body ended before the size given to Start; and the first write
// error, if any. A HEAD response, which has a header but no body, has
// nothing to finish. Close is idempotent.
func (r *Response) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	defer r.encs.release()
	if r.state != compressing || !r.started {
		return r.err
	}
	if r.err == nil && r.enc == nil {
		// An empty body: still a valid stream.
		enc, err := r.encs.get(r.coding, r.rw)
		if err != nil {
			r.fail(err)
			return r.err
		}
		r.enc = enc
	}
	if r.err == nil && r.want >= 0 && r.in != r.want {
		r.fail(ErrShortBody)
	}
	if r.err == nil {
		if err := r.enc.Close(); err != nil {
			r.fail(err)
		}
	}
	if r.enc != nil && r.err == nil {
		r.encs.put(r.coding, r.enc)
	}
	// An encoder that met an error is dropped: its state is unknown.
	r.enc = nil
	return r.err
}

func (r *Response) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBuffered copies src to dst through a pooled buffer.
func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{dst}, src, *bp)
}
