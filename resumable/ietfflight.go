package resumable

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// One request at a time works on an upload, and the newest wins, as the
// draft recommends: a client only sends a new request (an offset
// retrieval, an append, a cancellation) when it believes the previous one
// failed, though the server may still be reading it. So a new request
// stops the one in flight, waits until what it received is stored, and
// only then reads the upload's state: no answer ever shows an offset that
// a request still running will move.
//
// A request is stopped by making its body end: the reader below notices a
// flag between reads, and a read already blocked on the connection is
// woken by a read deadline in the past (set again until the request ends,
// since the body's own idle deadline may move it forward meanwhile). The
// stopped request stores what it received and cuts its connection without
// an answer; its client has given up on it.
//
// This holds within one server. Servers sharing a bucket do not see each
// other's requests: an append in flight through one is not stopped by a
// request through another, which the append's lease refuses instead
// (lease.go).

// stopPoll is how often a stopping request renews the read deadline that
// wakes the request it stops.
const stopPoll = 20 * time.Millisecond

// flight is a request at work on an upload, or waiting for its turn.
type flight struct {
	rc      *http.ResponseController // nil for a request without a body
	stopped atomic.Bool
	mu      sync.Mutex // orders the stopper's deadlines before the end
	over    bool
	done    chan struct{}
}

// enter registers a request on upload id, stops the one before it, and
// takes the upload's lock once that one is over. leave releases it all.
func (x *IETF) enter(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) (f *flight, leave func(), err error) {
	f = &flight{done: make(chan struct{})}
	if r.Body != nil && r.Body != http.NoBody {
		f.rc = http.NewResponseController(w)
	}
	x.mu.Lock()
	prev := x.flights[id]
	x.flights[id] = f
	x.mu.Unlock()
	unlock := func() {}
	leave = func() {
		f.mu.Lock()
		f.over = true
		f.mu.Unlock()
		unlock()
		x.mu.Lock()
		if x.flights[id] == f {
			delete(x.flights, id)
		}
		x.mu.Unlock()
		close(f.done)
	}
	if prev != nil {
		if err := prev.stop(ctx); err != nil {
			leave()
			return nil, nil, err
		}
	}
	unlock = x.h.locks.Lock(id)
	return f, leave, nil
}

// stop makes the request end and waits until it has.
func (f *flight) stop(ctx context.Context) error {
	f.stopped.Store(true)
	t := time.NewTicker(stopPoll)
	defer t.Stop()
	for {
		f.mu.Lock()
		if !f.over && f.rc != nil {
			f.rc.SetReadDeadline(time.Now())
		}
		f.mu.Unlock()
		select {
		case <-f.done:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// Why an upload stopped taking a request's bytes.
var (
	errStopped    = errors.New("stopped by a newer request on the upload")
	errPastLength = errors.New("bytes past the upload's length")
	errPastLimit  = errors.New("bytes past the size limit")
)

// body is a request body as an upload takes it. It never fails: it ends
// (io.EOF) where the upload must stop taking bytes, so that the staging
// stores, hashes and counts exactly what was read, and err says why it
// ended early: the client's own read error, errStopped, or past, the
// error of a byte beyond left.
type body struct {
	r    io.Reader
	f    *flight
	left int64 // bytes it may still take; -1: no bound
	past error
	err  error
}

func (b *body) Read(p []byte) (int, error) {
	switch {
	case b.err != nil:
		return 0, io.EOF
	case b.f.stopped.Load():
		b.err = errStopped
		return 0, io.EOF
	case b.left == 0:
		b.probe()
		return 0, io.EOF
	case b.left > 0 && int64(len(p)) > b.left:
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err != nil {
		if err != io.EOF {
			b.err = err
			if b.f.stopped.Load() {
				b.err = errStopped
			}
		}
		return n, io.EOF
	}
	return n, nil
}

// probe reads past the bound: a byte there is an error, the end is not.
func (b *body) probe() {
	var one [1]byte
	for range 100 { // a reader may return nothing a few times
		n, err := b.r.Read(one[:])
		switch {
		case n > 0:
			b.err = b.past
			return
		case err == io.EOF:
			return
		case err != nil:
			b.err = err
			if b.f.stopped.Load() {
				b.err = errStopped
			}
			return
		}
	}
}
