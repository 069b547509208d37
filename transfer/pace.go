package transfer

import (
	"context"
	"sync/atomic"
	"time"
)

// Pacer paces the bytes of a transfer to a bandwidth cap (package pace's
// Pacer is one). A paced Response sends a file in segments of Quantum
// bytes, each after a Wait for its bytes and each still by sendfile, so
// pacing copies nothing; other bodies are written in pieces
// of at most Quantum, each after its Wait. A paced Body reads at most
// Quantum bytes at a time and waits for what it read before it returns
// them, so a client uploading faster than the cap finds its window
// closed.
//
// The time spent in Wait is the server's, not the client's: the minimum
// rate (Options.MinRate) is reckoned without it, so a client held to a
// cap below the minimum rate is not cut for it.
type Pacer interface {
	// Quantum is the most bytes one Wait should be asked for.
	Quantum() int
	// Wait blocks until n more bytes may pass, or until ctx is done, when
	// it returns ctx's error.
	Wait(ctx context.Context, n int) error
}

// throttle counts the time a transfer waited for its Pacer. It may be
// read from any goroutine (the watchdog reads it).
type throttle struct {
	total atomic.Int64 // nanoseconds of the waits that ended
	since atomic.Int64 // when the wait in progress began, in Unix nanoseconds; 0 for none
}

// wait waits for n bytes of p, counting the time on clock now.
func (t *throttle) wait(ctx context.Context, p Pacer, n int, now func() time.Time) error {
	start := now()
	t.since.Store(start.UnixNano())
	err := p.Wait(ctx, n)
	t.total.Add(int64(now().Sub(start)))
	t.since.Store(0)
	return err
}

// at returns the time waited by now, the wait in progress included.
func (t *throttle) at(now time.Time) time.Duration {
	d := time.Duration(t.total.Load())
	if s := t.since.Load(); s != 0 {
		d += now.Sub(time.Unix(0, s))
	}
	return d
}

// Pace paces the response's body by out and the body of its request (the
// one Body made) by in; either may be nil for none. ctx is the request's:
// a wait ends when it does. Call it before the answer begins.
func (r *Response) Pace(ctx context.Context, out, in Pacer) {
	r.out, r.pctx = out, ctx
	if r.body != nil && in != nil {
		r.body.Pace(ctx, in)
	}
}

// Throttled returns how long the response's body waited for its Pacer.
func (r *Response) Throttled() time.Duration { return r.throttle.at(r.opt.Now()) }

// pace waits for n bytes of the response's Pacer.
func (r *Response) pace(n int) error {
	return r.throttle.wait(r.pctx, r.out, n, r.opt.Now)
}

// clientTime is how long the transfer has run by now, less the time it
// waited for its Pacer: the time the minimum rate is reckoned over.
func (r *Response) clientTime(now time.Time) time.Duration {
	return now.Sub(r.start) - r.throttle.at(now)
}

// pacedWrite writes p in pieces of at most the Pacer's quantum, each
// after its wait.
func (r *Response) pacedWrite(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		piece := p[:min(len(p), max(r.out.Quantum(), 1))]
		if err := r.pace(len(piece)); err != nil {
			r.fail(err)
			return n, err
		}
		k, err := r.write(piece)
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// Pace paces the body's reads by p; ctx is the request's: a wait ends
// when it does. Call it before the body is read.
func (b *Body) Pace(ctx context.Context, p Pacer) { b.pacer, b.pctx = p, ctx }

// Throttled returns how long reading the body waited for its Pacer.
func (b *Body) Throttled() time.Duration { return b.throttle.at(b.opt.Now()) }
