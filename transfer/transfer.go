// Package transfer governs long transfers by progress instead of by total
// time. A Response wraps an http.ResponseWriter: it sends file bodies in
// segments, each still handed to the kernel with sendfile, and extends the
// connection's write deadline before each one, so a client that stops
// reading is cut after the idle timeout however large the file, while a slow
// but steady client is never cut. It also counts the bytes sent and
// classifies how the transfer ended (Outcome).
//
// Why segments: http.Server's WriteTimeout caps a whole response, which cuts
// every long download; a single deadline per write would, with sendfile,
// cover the whole file. Segments are sized from the client's measured rate
// so that each one takes a fraction of the idle timeout.
//
// Response keeps sendfile alive: it implements io.ReaderFrom and passes an
// *os.File (anything implementing syscall.Conn, behind an io.LimitedReader)
// through to the underlying ResponseWriter, and it forwards Unwrap so that
// http.ResponseController reaches the connection. Over HTTP/1 the file
// goes to net/http's own ReadFrom, which holds a pooled 32 KiB copy buffer
// for as long as each sendfile runs; that is the price of staying on
// net/http's path, which keeps the connection alive after the body and
// lets every wrapper outside this one count the bytes (sending past
// net/http, on the connection itself, saved about 8 KiB of resident
// memory per download in flight, and was dropped: docs/BENCHMARKS.md).
//
// A Response may be paced to a bandwidth cap (Pace, with a Pacer of
// package pace): each segment is then the Pacer's quantum, waits for its
// bytes' worth of tokens, and is still sent by sendfile, so a cap costs no
// copy. The time spent waiting is the server's, and the minimum rate is
// reckoned without it.
//
// Body is the same for the other direction: it wraps a request body, moves
// the connection's read deadline as bytes arrive, counts them and says how
// the upload ended.
//
// A body the handler does not read is never waited for. net/http, left to
// itself, reads what remains of an unread body (up to 256 KiB) before it
// writes the status line, and again when the handler returns, with no read
// deadline at all: its ReadTimeout is off, by design, and it clears the
// header deadline once the head is read. A GET that announces a body and
// never sends it, or a refused PUT whose body never comes, would hold its
// connection for ever, past every timeout. So a Response made with
// Response.Body knows the request's body: when its answer begins before
// the body was read to its end (the handler will not read it after
// answering), it says Connection: close, which is what keeps net/http
// from draining before the status line; and closing the Body moves the
// read deadline into the past before the wrapped body is closed, so the
// drain at the end fails at once and the connection closes after the
// answer. A body read to its end leaves a kept-alive connection as it
// was. Over HTTP/2 only the stream ends; the connection stays.
//
// Header reads are bounded by the server's ReadHeaderTimeout, and idle
// kept-alive connections by its IdleTimeout; with those, every moment a
// connection waits for its client is governed: the head, a body being
// read (by progress), a body not read (not at all), the answer (by
// progress), and the wait for the next request. A wrapper of the
// net.Conn, moving a read deadline on every Read, could not do this
// alone: net/http reads in the background while a handler runs to notice
// a client that leaves, and a deadline there would cancel long downloads
// whose clients rightly send nothing.
package transfer

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options governs a transfer. The zero value sets no deadlines and no
// minimum rate.
type Options struct {
	// IdleTimeout is how long a client may go without taking any bytes
	// before it is cut. Zero means no limit.
	IdleTimeout time.Duration
	// MinRate, in bytes per second, is the lowest average rate a client may
	// keep once the first IdleTimeout (or ten seconds, without one) has
	// passed. Zero means no minimum.
	MinRate int64
	// Sent, when set, is called with every count of bytes that reaches the
	// connection, as it happens, so that counters stay current during long
	// transfers.
	Sent func(n int64)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// segment is how much of a file one sendfile call may send before the
// deadline is extended again.
const segment = 4 << 20

// smallBody is the largest body sent without a watchdog: the deadline set
// before it still cuts a client that takes nothing, and a body this small
// is taken whole by the socket's buffer at once unless the client has
// stopped, so the timer and the offset reads (a system call each) would
// only cost every small request. A client that takes less than this in a
// whole idle timeout is cut, as MinRate would.
const smallBody = 64 << 10

// ErrTooSlow is the error of a transfer cut for staying below MinRate.
var ErrTooSlow = errors.New("client below the minimum transfer rate")

// Response is an http.ResponseWriter that governs the transfer of its body.
// Like any ResponseWriter it is used by one goroutine at a time; Written may
// be read from any goroutine.
type Response struct {
	rw      http.ResponseWriter
	rc      http.ResponseController // held by value: one allocation less per request
	opt     Options
	start   time.Time
	status  int
	written atomic.Int64
	err     error

	mu       sync.Mutex // guards the deadline state against the watchdog
	dirty    bool       // a deadline was set on the connection
	extended time.Time  // when it was last set

	body  *Body           // the request's body, when Body made it
	http1 bool            // the request came over HTTP/1.x
	ctx   context.Context // the request's, when Body made it

	out      Pacer           // paces the body, when Pace set one
	pctx     context.Context // ends the Pacer's waits
	throttle throttle        // time waited for out
}

// NewResponse wraps w.
func NewResponse(w http.ResponseWriter, opt Options) *Response {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Response{rw: w, rc: *http.NewResponseController(w), opt: opt, start: opt.Now()}
}

var (
	_ io.ReaderFrom = (*Response)(nil)
	_ http.Flusher  = (*Response)(nil)
)

// Header implements http.ResponseWriter.
func (r *Response) Header() http.Header { return r.rw.Header() }

// Body returns the body of req, the request r answers, wrapped as NewBody
// wraps it, and ties it to r: once r begins its answer while the body is
// not read to its end, that body will never be read, so an HTTP/1.x answer
// says Connection: close (which also keeps net/http from draining the
// body before the status line), and Body.Close gives the rest up instead
// of letting net/http wait for it. Over HTTP/2 an unread body ends its
// stream alone, and the connection stays.
func (r *Response) Body(req *http.Request, opt BodyOptions) *Body {
	r.body = NewBody(r, req.Body, opt)
	r.http1 = req.ProtoMajor == 1
	r.ctx = req.Context()
	return r.body
}

// WriteHeader implements http.ResponseWriter.
func (r *Response) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.answer(code)
	}
	r.rw.WriteHeader(code)
}

// answer records the final status, as the answer begins. The minimum
// rate is reckoned from here: the time the handler took to make its
// answer (a listing of a million names, sorted before its first byte) is
// the server's, not the client's.
func (r *Response) answer(code int) {
	r.status = code
	r.start = r.opt.Now()
	if r.body != nil && r.http1 && !r.body.Done() {
		r.rw.Header().Set("Connection", "close")
		linger(r.ctx)
	}
}

// Write implements http.ResponseWriter, extending the write deadline first
// (and, when paced, in pieces each after its wait: see Pacer).
func (r *Response) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.status == 0 {
		r.answer(http.StatusOK)
	}
	if r.out != nil && len(p) > 0 {
		return r.pacedWrite(p)
	}
	return r.write(p)
}

// write writes p, extending the write deadline first.
func (r *Response) write(p []byte) (int, error) {
	r.extend()
	n, err := r.rw.Write(p)
	r.count(int64(n))
	if err == nil {
		err = r.checkRate()
	}
	if err != nil {
		r.fail(err)
	}
	return n, err
}

// ReadFrom implements io.ReaderFrom. A source that is an operating-system
// file, bare or behind an io.LimitedReader as http.ServeContent passes it,
// is sent in segments by the underlying writer's ReadFrom (sendfile); any
// other source is copied through a pooled buffer by Write. A segment that
// ends short is followed by the next, until one sends nothing: a source
// whose descriptor holds a slice of it at a time (largo.SliceFile) is sent
// a slice per sendfile.
//
// Within a segment the kernel moves the bytes and no code of ours runs, so a
// watchdog reads the file's offset every eighth of the idle timeout (a
// timer, no goroutine while it sleeps) and extends the deadline whenever the
// offset moved: a client is cut only after at least seven eighths of an idle
// timeout without taking a byte, however slowly it reads.
//
// A paced Response (Pace) sends segments of the Pacer's quantum (which may
// be larger than an unpaced segment: each burst after a wait costs more
// per byte than a steady stream, so fewer, larger ones cost less), each
// after a wait for its bytes.
func (r *Response) ReadFrom(src io.Reader) (int64, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.status == 0 {
		r.answer(http.StatusOK)
	}
	rf, ok := r.rw.(io.ReaderFrom)
	lr, limited := src.(*io.LimitedReader)
	inner := src
	remain := int64(math.MaxInt64)
	if limited {
		inner, remain = lr.R, lr.N
	}
	if _, isFile := inner.(syscall.Conn); !ok || !isFile {
		return r.copy(src, ok)
	}
	var wd *watchdog // none: stop and tooSlow take nil
	if remain > smallBody {
		wd = r.watch(inner)
	}
	defer wd.stop()
	var total int64
	part := &io.LimitedReader{R: inner} // one for every segment: no garbage per segment
	for remain > 0 {
		seg := min(segment, remain)
		if r.out != nil {
			seg = min(remain, int64(max(r.out.Quantum(), 1)))
			if err := r.pace(int(seg)); err != nil {
				r.fail(err)
				break
			}
		}
		r.extend()
		part.N = seg
		n, err := rf.ReadFrom(part)
		total += n
		remain -= n
		r.count(n)
		if err == nil {
			err = r.checkRate()
		}
		if err != nil {
			if wd.tooSlow() {
				err = ErrTooSlow
			}
			r.fail(err)
			break
		}
		if n == 0 {
			break // end of the source
		}
		// A segment sent short goes on: a file held in slices
		// (largo.SliceFile) offers one slice to each sendfile.
	}
	if limited {
		lr.N = remain
	}
	return total, r.err
}

// The pooled copy buffers: 32 KiB where the connection takes files itself
// (an HTTP/1 response, whose copies are the sources that are not files),
// and eight frames' worth for a writer without ReadFrom (an HTTP/2
// stream), each of whose writes waits for the connection's goroutine to
// frame it: a larger read means fewer reads of the source. Measured on a
// 1 GiB download over HTTP/2 (docs/BENCHMARKS.md), medians of two runs of
// five: 1.07 and 1.21 CPU seconds per GiB instead of 1.22 and 1.32, at the
// cost of 96 KiB more per HTTP/2 download in flight.
var (
	bufPool   = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	framePool = sync.Pool{New: func() any { b := make([]byte, 8*frameData); return &b }}
)

// frameData is what one HTTP/2 DATA frame carries when the stream writes
// it: 16 KiB, the largest TLS record's plaintext, less the frame's 9-byte
// header. The HTTP/2 server frames each write of a handler whole when the
// client's frame size and window allow, and writes each frame with its
// header in one write to the TLS connection. A full 16 KiB frame is 9
// bytes longer than a record, so TLS sent every frame as a full record and
// a 9-byte one, two system calls and two seals for every 16 KiB; a frame
// of frameData bytes is exactly one record.
const frameData = 16<<10 - 9

// copy sends src through Write with a pooled buffer; readerFrom says
// whether the wrapped writer takes files itself (see bufPool). Without
// it the writes are cut to frameData bytes each.
func (r *Response) copy(src io.Reader, readerFrom bool) (int64, error) {
	if readerFrom {
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		return io.CopyBuffer(writerOnly{r}, src, *bp)
	}
	bp := framePool.Get().(*[]byte)
	defer framePool.Put(bp)
	return io.CopyBuffer(frameWriter{r}, src, *bp)
}

// writerOnly hides Response.ReadFrom from io.CopyBuffer.
type writerOnly struct{ io.Writer }

// frameWriter cuts each write into writes of at most frameData bytes.
type frameWriter struct{ w io.Writer }

func (f frameWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		k, err := f.w.Write(p[:min(len(p), frameData)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// extend moves the write deadline to one idle timeout from now. Moving it
// costs a timer update (for HTTP/2, a message to the connection's
// goroutine), so it is skipped while the current deadline is still at
// least 15/16 of the timeout away: small writes stay cheap.
func (r *Response) extend() {
	if r.opt.IdleTimeout <= 0 {
		return
	}
	now := r.opt.Now()
	r.mu.Lock()
	fresh := r.dirty && now.Sub(r.extended) < r.opt.IdleTimeout/16
	r.mu.Unlock()
	if !fresh {
		r.setDeadline(now.Add(r.opt.IdleTimeout))
	}
}

// setDeadline sets the connection's write deadline. The watchdog calls it
// from its timer while the handler's goroutine is inside sendfile; for
// HTTP/1 that is a deadline on the net.Conn, which is safe to move from
// any goroutine.
func (r *Response) setDeadline(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.rc.SetWriteDeadline(t); err == nil {
		r.dirty = !t.IsZero()
		r.extended = r.opt.Now()
	}
}

// checkRate enforces MinRate once its grace period is over.
func (r *Response) checkRate() error {
	if belowRate(r.opt.MinRate, r.opt.IdleTimeout, r.clientTime(r.opt.Now()), r.written.Load()) {
		return ErrTooSlow
	}
	return nil
}

// belowRate reports whether a transfer that has moved n bytes in elapsed
// averages less than minRate, once the grace period (the first idle
// timeout, or ten seconds without one) is over.
func belowRate(minRate int64, idle, elapsed time.Duration, n int64) bool {
	if minRate <= 0 {
		return false
	}
	grace := idle
	if grace <= 0 {
		grace = 10 * time.Second
	}
	return elapsed >= grace && float64(n)/elapsed.Seconds() < float64(minRate)
}

func (r *Response) count(n int64) {
	if n <= 0 {
		return
	}
	r.written.Add(n)
	if r.opt.Sent != nil {
		r.opt.Sent(n)
	}
}

func (r *Response) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Flush implements http.Flusher. Like a write, it begins the answer.
func (r *Response) Flush() {
	if r.status == 0 {
		r.answer(http.StatusOK)
	}
	r.extend()
	if err := r.rc.Flush(); err != nil {
		r.fail(err)
	}
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (r *Response) Unwrap() http.ResponseWriter { return r.rw }

// Status returns the status sent, 200 if the body was written without one,
// or 0 if nothing was sent yet.
func (r *Response) Status() int { return r.status }

// Written returns the number of body bytes that reached the connection.
func (r *Response) Written() int64 { return r.written.Load() }

// Err returns the first error met while writing, or nil.
func (r *Response) Err() error { return r.err }

// Finish clears the deadline this transfer put on the connection, so that a
// kept-alive connection's next request starts clean. Call it once the
// handler has returned.
func (r *Response) Finish() {
	r.mu.Lock()
	dirty := r.dirty
	r.mu.Unlock()
	if dirty && r.err == nil {
		r.setDeadline(time.Time{})
	}
}

// Outcome says how the transfer ended: Complete, or why it did not. method
// is the request's method: a HEAD response sends no body, whatever its
// Content-Length says.
func (r *Response) Outcome(method string) Outcome {
	if r.err != nil {
		return Classify(r.err)
	}
	if method != http.MethodHead && r.status != http.StatusNotModified && r.rw.Header().Get("Content-Encoding") == "" {
		if cl, err := strconv.ParseInt(r.rw.Header().Get("Content-Length"), 10, 64); err == nil && r.written.Load() < cl {
			return Error // the source ended early: the file shrank under us
		}
	}
	return Complete
}
