package transfer

import (
	"io"
	"sync"
	"time"
)

// watchdog extends the write deadline of a Response while sendfile makes
// progress, and cuts the transfer when the client stays below MinRate. It
// learns the progress from the source file's offset, which sendfile advances
// as the socket takes the bytes.
type watchdog struct {
	r     *Response
	f     io.Seeker
	every time.Duration

	startPos, startWritten int64 // where the watch began

	mu      sync.Mutex
	t       *time.Timer
	last    int64
	stopped bool
	slow    bool
}

// watch starts a watchdog over src, or returns an inert one when there is
// nothing to watch (no idle timeout, or a source that cannot tell its
// offset).
func (r *Response) watch(src io.Reader) *watchdog {
	w := &watchdog{r: r}
	f, ok := src.(io.Seeker)
	if !ok || (r.opt.IdleTimeout <= 0 && r.opt.MinRate <= 0) {
		return w
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return w
	}
	w.f, w.last, w.startPos, w.startWritten = f, pos, pos, r.written.Load()
	w.every = r.opt.IdleTimeout / 8
	if w.every <= 0 || w.every > time.Second && r.opt.MinRate > 0 {
		w.every = time.Second
	}
	w.t = time.AfterFunc(w.every, w.tick)
	return w
}

func (w *watchdog) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	pos, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return
	}
	if pos != w.last {
		w.last = pos
		w.r.extend()
	}
	if w.r.opt.MinRate > 0 && w.belowRate(pos) {
		// A deadline in the past fails the blocked write at once.
		w.slow = true
		w.r.setDeadline(time.Unix(1, 0))
		return
	}
	w.t.Reset(w.every)
}

// belowRate reports whether the client, counting the bytes of the segment
// in flight, averages less than MinRate after the grace period.
func (w *watchdog) belowRate(pos int64) bool {
	o := w.r.opt
	return belowRate(o.MinRate, o.IdleTimeout, w.r.clientTime(o.Now()), w.startWritten+pos-w.startPos)
}

// tooSlow reports whether the watchdog cut the transfer for its rate; a
// nil one never did.
func (w *watchdog) tooSlow() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.slow
}

// stop ends the watchdog; once it returns, the timer will not touch the
// Response again. A nil watchdog (none was started) does nothing.
func (w *watchdog) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.t != nil {
		w.t.Stop()
	}
}
