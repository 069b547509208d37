package transfer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// BodyOptions governs the reading of a request body. The zero value sets no
// deadlines and no minimum rate.
type BodyOptions struct {
	// IdleTimeout is how long a client may go without sending any bytes
	// before it is cut. Zero means no limit.
	IdleTimeout time.Duration
	// MinRate, in bytes per second, is the lowest average rate a client may
	// keep once the first IdleTimeout (or ten seconds, without one) has
	// passed. Zero means no minimum.
	MinRate int64
	// Received, when set, is called with every count of bytes read, as it
	// happens.
	Received func(n int64)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Body is the request-side counterpart of Response: it wraps a request body,
// moves the connection's read deadline forward as bytes arrive, so that an
// uploader that stalls is cut after the idle timeout however large its
// file while a slow but steady one is never cut, counts the bytes, and
// records how reading ended. Like the body it wraps it is read by one
// goroutine at a time; BytesRead may be called from any.
type Body struct {
	body  io.ReadCloser
	rc    *http.ResponseController
	opt   BodyOptions
	start time.Time
	last  time.Time // when the deadline was last moved
	read  atomic.Int64
	err   error
	eof   bool
	dirty bool // a deadline is set on the connection

	pacer    Pacer           // paces the reads, when Pace set one
	pctx     context.Context // ends the Pacer's waits
	throttle throttle        // time waited for pacer
}

var _ io.ReadCloser = (*Body)(nil)

// NewBody wraps body, the body of the request that w answers.
func NewBody(w http.ResponseWriter, body io.ReadCloser, opt BodyOptions) *Body {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Body{body: body, rc: http.NewResponseController(w), opt: opt, start: opt.Now()}
}

// Read implements io.Reader. A paced Body (Pace) reads at most the
// Pacer's quantum and waits for the bytes it read before it returns them.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.pacer != nil {
		p = p[:min(len(p), max(b.pacer.Quantum(), 1))]
	}
	b.extend()
	n, err := b.body.Read(p)
	if n > 0 {
		b.read.Add(int64(n))
		if b.opt.Received != nil {
			b.opt.Received(int64(n))
		}
		if b.pacer != nil {
			if werr := b.throttle.wait(b.pctx, b.pacer, n, b.opt.Now); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err == nil {
		err = b.checkRate()
	}
	switch {
	case err == io.EOF:
		b.eof = true
		b.clear() // what follows (fsync, rename) is not the client's time
	case err != nil:
		b.err = err
	}
	return n, err
}

// extend moves the read deadline to one idle timeout from now, at most
// sixteen times per idle timeout.
func (b *Body) extend() {
	if b.opt.IdleTimeout <= 0 {
		return
	}
	now := b.opt.Now()
	if b.dirty && now.Sub(b.last) < b.opt.IdleTimeout/16 {
		return
	}
	if err := b.rc.SetReadDeadline(now.Add(b.opt.IdleTimeout)); err == nil {
		b.last, b.dirty = now, true
	}
}

// clear removes the deadline this body put on the connection.
func (b *Body) clear() {
	if b.dirty {
		b.rc.SetReadDeadline(time.Time{})
		b.dirty = false
	}
}

func (b *Body) checkRate() error {
	now := b.opt.Now()
	if belowRate(b.opt.MinRate, b.opt.IdleTimeout, now.Sub(b.start)-b.throttle.at(now), b.read.Load()) {
		return ErrTooSlow
	}
	return nil
}

// Close closes the body. A body read to its end leaves the connection
// without a deadline, as it found it. A body not read to its end is given
// up: the read deadline is moved into the past before the wrapped body is
// closed, so that net/http, which would otherwise read up to 256 KiB of
// what is left with no deadline at all, finds the connection failing at
// once and closes it after the answer. Nothing of the rest is waited for.
func (b *Body) Close() error {
	if b.eof {
		b.clear()
	} else {
		b.rc.SetReadDeadline(time.Unix(1, 0))
		b.dirty = true
	}
	return b.body.Close()
}

// BytesRead returns the number of bytes read so far.
func (b *Body) BytesRead() int64 { return b.read.Load() }

// Err returns the error that ended reading, or nil if the body was read to
// its end or is still being read.
func (b *Body) Err() error { return b.err }

// Done reports whether the body was read to its end.
func (b *Body) Done() bool { return b.eof }

// Outcome says how reading ended: Complete when the body was read to its
// end (or is not read yet), Timeout for a stalled or too slow client,
// Aborted for a client that went away or sent less than it announced,
// Rejected for a body over its size limit.
func (b *Body) Outcome() Outcome {
	if b.err == nil {
		return Complete
	}
	var mbe *http.MaxBytesError
	if errors.As(b.err, &mbe) {
		return Rejected
	}
	return Classify(b.err)
}
