// Package logwriter takes the writing of a log off the path of whoever
// logs: Writer copies each line into a bounded queue and returns, and one
// goroutine of its own writes what has queued up, in one write per batch,
// to the real destination (a terminal, a pipe, a file).
//
// A server's access log is one line per request; written straight to a
// file or pipe it costs every request a system call on the request's own
// goroutine, and under load the callers queue on the handler's lock
// behind it. Through a Writer a request pays for a copy into memory, and
// the lines of many requests leave in one system call.
//
// No line is dropped: when the queue is full (the destination is slower
// than the lines arrive), Write waits until the goroutine has taken the
// queue, which is what an unbuffered log would have made it wait anyway.
// Nothing is held back on a timer: the goroutine writes as soon as it
// runs, so a quiet server's line is out at once, and a busy server's
// lines go out in batches. Close writes what is queued and stops the
// goroutine; a Write after Close goes straight to the destination. A
// process killed outright (SIGKILL) loses what is still queued: the lines
// of its last moments, which an unbuffered log would have written.
package logwriter

import (
	"io"
	"runtime"
	"sync"
)

// DefaultMax is the queue's size when New is given none: enough for a few
// hundred access lines.
const DefaultMax = 64 << 10

// initialCap is what each of the two buffers starts with.
const initialCap = 4 << 10

// Writer is an io.Writer whose writes reach the destination on a
// goroutine of its own. Create one with New; it is safe for concurrent
// use. Each Write reaches the destination whole, in order.
type Writer struct {
	out  io.Writer
	max  int
	kick chan struct{} // a batch is waiting (buffered, one slot)
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the goroutine has ended

	mu      sync.Mutex
	changed *sync.Cond // the queue was taken, or a batch written
	queue   []byte
	writing bool // the goroutine is writing a batch
	closed  bool
	err     error // the destination's first error
}

// New returns a Writer that writes to out, queueing at most max bytes
// (DefaultMax when max <= 0; a single longer write is still taken whole),
// and starts its goroutine, which runs until Close.
func New(out io.Writer, max int) *Writer {
	if max <= 0 {
		max = DefaultMax
	}
	w := &Writer{
		out:   out,
		max:   max,
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		queue: make([]byte, 0, initialCap),
	}
	w.changed = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// Write queues a copy of p and returns, waiting first while the queue is
// full. It fails only after Close, with the destination's error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && len(w.queue) > 0 && len(w.queue)+len(p) > w.max {
		w.changed.Wait()
	}
	if w.closed {
		// After the queue's last batch, never before it nor beside it.
		w.mu.Unlock()
		<-w.done
		w.mu.Lock()
		return w.out.Write(p)
	}
	w.queue = append(w.queue, p...)
	select {
	case w.kick <- struct{}{}:
	default: // the goroutine is already told
	}
	return len(p), nil
}

// Flush waits until everything written so far has been handed to the
// destination, and returns the destination's first error, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && (len(w.queue) > 0 || w.writing) {
		w.changed.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		<-w.done
		w.mu.Lock()
	}
	return w.err
}

// Close writes what is queued, stops the goroutine and returns the
// destination's first error, if any. Writes after Close go straight to
// the destination.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return w.Err()
	}
	w.closed = true
	w.changed.Broadcast()
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return w.Err()
}

// Err returns the destination's first error, if any: the lines of that
// write and of later failing ones are lost, as they would have been
// without the queue.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// run writes batches until Close, then the last one.
func (w *Writer) run() {
	defer close(w.done)
	spare := make([]byte, 0, initialCap)
	for {
		var stopping bool
		select {
		case <-w.kick:
			// Let the goroutines that are ready run first: under load,
			// each adds its line, and they leave together in one write.
			// A quiet server has none waiting, and its line goes at once.
			runtime.Gosched()
		case <-w.stop:
			stopping = true
		}
		w.mu.Lock()
		batch := w.queue
		w.queue = spare[:0]
		w.writing = len(batch) > 0
		w.changed.Broadcast()
		w.mu.Unlock()

		if len(batch) > 0 {
			_, err := w.out.Write(batch)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = err
			}
			w.writing = false
			w.changed.Broadcast()
			w.mu.Unlock()
		}
		if cap(batch) > 4*w.max {
			batch = nil // one huge line: do not keep its buffer
		}
		spare = batch
		if stopping {
			return
		}
	}
}
