// Package quick answers the small requests of a plain HTTP/1.1
// connection itself, before net/http reads them, through the server's
// own handler: a lane for the files a server keeps in memory.
//
// net/http's work per request is made for every kind of request: a
// goroutine that reads in the background while the handler runs (to see
// the client leave), a context, a response writer that sorts and copies
// the handler's header, a buffer pool, deadlines moved four times. For a
// GET of a small file kept in memory that work is most of what the
// server does beside the system calls (docs/BENCHMARKS.md). The lane
// does the least a small complete answer needs: it parses the request
// with net/http's own parser (http.ReadRequest, with the checks net/http
// adds), runs the same handler, gathers the answer (head and body) and
// sends it in one write.
//
// It sits in the connection, below net/http: a Listener's connections
// answer, inside net/http's first Read, every request the lane takes
// (Config.Takes: a GET or HEAD whose answer is small and complete, the
// server's to say), and hand the connection to net/http at the first one
// it does not take, with the bytes read so far, which net/http then
// reads as if nothing came before. From then on the connection is
// net/http's alone. So net/http keeps everything it does (its limits,
// timeouts, bodies, every other method, errors, shutdown) and a client
// that mixes requests loses nothing: the lane takes the first requests
// of a connection, or none.
//
// An answer the handler offers to give again (Offer: a kept file's whole
// answer to anyone) is kept with the question it answered, and the same
// question, asked plainly, is answered with it again without parsing it
// into a request or running the handler, once the handler says it still
// would (replay.go).
//
// What the lane takes it takes whole: a request with a body, or one that
// asks for something of the connection (Expect, Upgrade, a Connection
// option other than keep-alive or close), a head larger than net/http's
// read buffer, HTTP/1.0, a head net/http would refuse: all go to
// net/http. An answer that turns out large (the file grew between the
// question and the answer) is sent as it comes, with its length or in
// chunks, as net/http would.
package quick

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"largo/internal/netconn"
)

// Config is what a Listener's lane needs of its server.
type Config struct {
	// Server is the http.Server that serves the Listener: its Handler
	// answers the lane's requests, its ConnContext, ReadHeaderTimeout
	// and IdleTimeout apply, its ErrorLog takes the lane's panics.
	Server *http.Server
	// Takes reports whether the lane answers r, a GET or HEAD with no
	// body: whether its answer is small and complete at once (a file
	// kept in memory). It must be quick and safe for concurrent use.
	Takes func(r *http.Request) bool
}

// Listener wraps a net.Listener whose connections net/http serves in
// plain HTTP/1.1, so that they answer what Config.Takes first.
//
// net/http counts a connection in the lane as new, and a server's
// Shutdown waits five seconds before it takes such a one for idle: so
// the Listener is told of the Shutdown itself (RegisterOnShutdown), and
// ends at once each connection that waits in the lane for a request.
type Listener struct {
	net.Listener
	cfg     *Config
	dates   dateCache
	closing atomic.Bool
	mu      sync.Mutex
	lane    map[*Conn]struct{} // the connections not handed over
	replays replays            // the answers kept to be sent again
}

// NewListener returns a Listener over ln.
func NewListener(ln net.Listener, cfg Config) *Listener {
	l := &Listener{Listener: ln, cfg: &cfg, lane: map[*Conn]struct{}{}}
	cfg.Server.RegisterOnShutdown(l.shutdown)
	return l
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &Conn{Conn: c, cfg: l.cfg, l: l}
	l.mu.Lock()
	l.lane[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// leave takes c out of the lane: handed over, or closed.
func (l *Listener) leave(c *Conn) {
	l.mu.Lock()
	delete(l.lane, c)
	l.mu.Unlock()
}

// shutdown ends the lane: a connection waiting in it for a request reads
// no more (its read deadline passed) and ends; one answering ends after
// its answer.
func (l *Listener) shutdown() {
	l.closing.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.lane {
		c.Conn.SetReadDeadline(aLongTimeAgo)
	}
}

var aLongTimeAgo = time.Unix(1, 0)

// Conn is a connection of a Listener. net/http reads it; until the lane
// hands it over, its Read answers the requests the lane takes.
type Conn struct {
	net.Conn
	cfg    *Config
	l      *Listener
	handed bool            // net/http's from now on
	ctx    context.Context // the requests' base, made at the first one
	remote string          // the client's address, as requests name it
	served int             // requests the lane answered
	// headBegun is set once bytes of the next head came, and its
	// header timeout runs.
	headBegun bool
	head      bytes.Reader // the head being parsed
	header    http.Header  // the answers' fields, cleared between them
	// answering is set while the handler answers a request of the lane;
	// offer is what it offered to be sent again (Offer).
	answering bool
	offer     Kept
	key       []byte // a replay's key, made in place
}

// Close implements net.Conn.
func (c *Conn) Close() error {
	c.l.leave(c)
	return c.Conn.Close()
}

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// ReadFrom passes the source to the wrapped connection's ReadFrom, where
// *net.TCPConn uses sendfile for files.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) { return netconn.ReadFrom(c.Conn, r) }

// CloseWrite shuts the sending side, as net/http does before closing.
func (c *Conn) CloseWrite() error { return netconn.CloseWrite(c.Conn) }

// errClosed ends net/http's read of a connection the lane closed (a
// request asked for it, or its answer could not be sent whole).
var errClosed = errors.New("quick: connection closed after an answer")

// Read implements net.Conn. Until the lane hands the connection over,
// it reads requests into p (net/http's buffer) and answers those the
// lane takes; it returns the bytes of the first it does not take, and
// from then on reads for net/http alone.
func (c *Conn) Read(p []byte) (int, error) {
	if c.handed {
		return c.Conn.Read(p)
	}
	n := 0
	for {
		end, strict := headEnd(p[:n])
		if end >= 0 && !strict {
			// A head whose lines end in a bare LF: net/http's to read,
			// as it reads them.
			return c.handOver(n), nil
		}
		if end < 0 {
			if n == len(p) {
				return c.handOver(n), nil // a head net/http's buffer cannot hold
			}
			c.readDeadline(n)
			if c.l.closing.Load() {
				// The server shuts down: no more requests here.
				if n > 0 {
					return c.handOver(n), nil
				}
				return 0, io.EOF
			}
			m, err := c.Conn.Read(p[n:])
			n += m
			if err != nil {
				if n > 0 {
					c.handOver(n)
				}
				return n, err
			}
			continue
		}
		if answered, keep := c.replay(p[:end]); answered {
			if !keep {
				c.Conn.Close()
				return 0, errClosed
			}
			n = copy(p, p[end:n])
			continue
		}
		r := c.request(p[:end])
		if r == nil {
			return c.handOver(n), nil
		}
		if !c.answer(r, p[:end]) {
			c.Conn.Close()
			return 0, errClosed
		}
		n = copy(p, p[end:n])
	}
}

// headEnd returns where the head that b begins ends, past its blank
// line, or -1 when b holds no blank line yet; strict reports a head that
// ends in CRLF CRLF, as every head the lane takes does. A line may end in
// a bare LF (net/http reads it so): a head whose blank line comes after
// one, or is one, ends there too, and is not strict.
func headEnd(b []byte) (end int, strict bool) {
	lf := bytes.Index(b, []byte("\n\n"))
	crlf := bytes.Index(b, []byte("\n\r\n"))
	switch {
	case crlf >= 0 && (lf < 0 || crlf < lf):
		return crlf + 3, crlf > 0 && b[crlf-1] == '\r' && !bareLF(b[:crlf])
	case lf >= 0:
		return lf + 2, false
	}
	return -1, false
}

// bareLF reports whether b holds an LF not preceded by a CR.
func bareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

// handOver gives the connection to net/http with the n bytes read, and
// returns n. net/http moves the read deadline itself once it has the
// head; until then, the header timeout from now.
func (c *Conn) handOver(n int) int {
	c.handed = true
	c.l.leave(c)
	if d := c.cfg.Server.ReadHeaderTimeout; d > 0 {
		c.Conn.SetReadDeadline(time.Now().Add(d))
	}
	return n
}

// readDeadline sets the read deadline of the wait for a request's head,
// read bytes of it read so far: net/http's own until the lane answered
// one (the header timeout since the connection began), then the idle
// timeout until the first byte, and the header timeout from the first
// byte, once: a head that trickles in is cut when it is due, however
// often its bytes come.
func (c *Conn) readDeadline(read int) {
	if c.served == 0 {
		return
	}
	s := c.cfg.Server
	var d time.Duration
	switch {
	case read == 0:
		c.headBegun = false
		d = s.IdleTimeout
		if d == 0 {
			d = s.ReadHeaderTimeout
		}
	case !c.headBegun:
		c.headBegun = true
		d = s.ReadHeaderTimeout
	default:
		return
	}
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	c.Conn.SetReadDeadline(t)
}

// readers parse heads read whole already.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 512) }}

// request returns the request of head when the lane takes it, nil when
// net/http is to read it: what is not a plain GET or HEAD of HTTP/1.1
// with no body and nothing asked of the connection, what net/http would
// refuse, and what Config.Takes does not take.
func (c *Conn) request(head []byte) *http.Request {
	if !bytes.HasPrefix(head, []byte("GET /")) && !bytes.HasPrefix(head, []byte("HEAD /")) {
		return nil
	}
	br := readers.Get().(*bufio.Reader)
	c.head.Reset(head)
	br.Reset(&c.head)
	r, err := http.ReadRequest(br)
	br.Reset(nil)
	readers.Put(br)
	if err != nil || r.ProtoMajor != 1 || r.ProtoMinor != 1 || !plain(r) {
		return nil
	}
	if !c.cfg.Takes(r) {
		return nil
	}
	if c.ctx == nil {
		ctx := context.WithValue(context.Background(), http.ServerContextKey, c.cfg.Server)
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.Conn.LocalAddr())
		if cc := c.cfg.Server.ConnContext; cc != nil {
			ctx = cc(ctx, c)
		}
		c.ctx = ctx
		c.remote = c.Conn.RemoteAddr().String()
	}
	r.RemoteAddr = c.remote
	return r
}

// plain reports whether r is a request net/http would take and answer
// with nothing asked of the connection: a valid Host, valid field
// names and values, no body, no Expect, Upgrade or Connection option
// but keep-alive and close.
func plain(r *http.Request) bool {
	// http.ReadRequest refuses two Host fields, and moves the one to
	// r.Host.
	if r.Host == "" || !httpguts.ValidHostHeader(r.Host) || r.Body != http.NoBody || r.ContentLength != 0 {
		return false
	}
	for k, vv := range r.Header {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer", "Http2-Settings":
			return false
		case "Connection":
			for _, v := range vv {
				for o := range strings.SplitSeq(v, ",") {
					if o = strings.TrimSpace(o); !strings.EqualFold(o, "keep-alive") && !strings.EqualFold(o, "close") {
						return false
					}
				}
			}
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}
