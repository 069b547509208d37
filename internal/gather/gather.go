// Package gather sends the writes of one small answer in one system
// call.
//
// net/http writes an answer through a 4 KiB buffer of the connection:
// an answer whose head and body together pass it (a kept file of 4 KiB,
// its head of about 250 bytes) leaves in two writes, the full buffer in
// the body's and the rest when the handler returns. Measured beside a
// 3.6 KiB body that fits, the second write costs about a third of
// net/http's whole work for the answer (docs/BENCHMARKS.md).
//
// A handler that writes a whole answer from memory and returns at once
// asks the connection to hold its writes (Hold): they are gathered in a
// buffer of the connection's and leave in one write as soon as the
// server moves the connection's read deadline (net/http does when the
// handler is done, before it waits for the next request) or closes it;
// and at once, in order, ahead of any write not held, a sendfile
// (ReadFrom) or a buffer past MaxHeld. A
// handler that may wait between writes (a stream, an answer flushed in
// pieces) must not ask: its writes would wait with it.
//
// Only answers of HTTP/1 are held: an HTTP/2 connection writes frames of
// many streams from a goroutine of its own, while another one reads.
package gather

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"largo/internal/netconn"
)

// MaxHeld is the most a connection holds: a write that would pass it
// sends what is held, and itself, at once.
const MaxHeld = 64 << 10

// Listener wraps a net.Listener so that its connections can hold the
// writes of an answer (Hold).
type Listener struct{ net.Listener }

// Accept implements net.Listener.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c}, nil
}

// Conn is an accepted connection that may hold the writes of an answer.
// Its methods are safe for concurrent use as net.Conn's are; holding is
// meant for the goroutine that writes the answer.
type Conn struct {
	net.Conn
	// holding is set while the writes are held: until then no method
	// takes mu, so that a connection that holds nothing (every one but
	// a kept file's answer, every HTTP/2 one) writes and reads as if
	// unwrapped, its reads never waiting behind its writes.
	holding atomic.Bool
	mu      sync.Mutex // held while holding, around every write
	buf     *[]byte    // what is held, nil while nothing is
}

// holder is what Hold looks for on the way down from the connection a
// request's context names.
type holder interface{ hold() }

// Hold asks conn (the connection of an HTTP/1 request, as an
// http.Server's ConnContext saw it: a *Conn, or one that unwraps to it by
// NetConn, as *tls.Conn does) to hold the writes that follow until the
// server reads from it again or closes it. A connection of no Listener
// holds nothing.
func Hold(conn net.Conn) {
	if h, ok := netconn.Find[holder](conn); ok {
		h.hold()
	}
}

func (c *Conn) hold() {
	c.mu.Lock()
	c.holding.Store(true)
	c.mu.Unlock()
}

// bufs keeps the buffers of held writes between answers, so that an idle
// connection holds none.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Write implements net.Conn: held, or sent after what is held.
func (c *Conn) Write(p []byte) (int, error) {
	if !c.holding.Load() {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding.Load() && c.held()+len(p) <= MaxHeld {
		if c.buf == nil {
			c.buf = bufs.Get().(*[]byte)
		}
		*c.buf = append(*c.buf, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *Conn) held() int {
	if c.buf == nil {
		return 0
	}
	return len(*c.buf)
}

// flushLocked sends what is held and stops holding, only then: a write
// that found the connection holding waits for mu, so nothing overtakes
// what is held. A write that fails fails the answer's later writes as it
// would have failed them unheld: they meet the same broken connection.
func (c *Conn) flushLocked() error {
	defer c.holding.Store(false)
	if c.buf == nil {
		return nil
	}
	b := c.buf
	c.buf = nil
	_, err := c.Conn.Write(*b)
	if cap(*b) <= MaxHeld {
		*b = (*b)[:0]
		bufs.Put(b)
	}
	return err
}

// Flush sends what is held, if anything.
func (c *Conn) Flush() error {
	if !c.holding.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// Reads do not send what is held: net/http reads from a connection in
// the background while the handler writes (to see the client leave), and
// that read may begin at any point of the answer. Between answers it
// always moves the read deadline first (SetReadDeadline), and that sends
// it.

// SetReadDeadline implements net.Conn: net/http moves it once an answer
// is done, so what is held leaves then.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.Flush()
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	c.Flush()
	return c.Conn.SetDeadline(t)
}

// Close implements net.Conn: what is held leaves first.
func (c *Conn) Close() error {
	c.Flush()
	return c.Conn.Close()
}

// CloseWrite shuts the sending side after what is held, as net/http
// does before it closes.
func (c *Conn) CloseWrite() error {
	c.Flush()
	return netconn.CloseWrite(c.Conn)
}

// ReadFrom sends what is held, then passes the source to the wrapped
// connection's ReadFrom, where *net.TCPConn uses sendfile for files.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return netconn.ReadFrom(c.Conn, r)
}

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }
