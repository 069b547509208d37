// Package limit caps the connections a server holds: in total and per
// client address. It wraps a net.Listener, so a connection beyond the caps
// is turned away before it costs a goroutine in the HTTP server, a buffer
// or a file.
//
// Behind a proxy every connection comes from the proxy's address, so a
// cap per address would cap everyone at once: connections from trusted
// proxies (Config.Trusted) count only against the total, and a proxy
// that names each connection's client in a PROXY protocol header
// (proxy.go) has the connection counted for that client.
//
// A refused plain-HTTP connection is answered, when cheap enough, with a
// minimal "503 Service Unavailable" and a Retry-After header by a small,
// bounded pool of goroutines; past that bound, or on a TLS listener, it is
// simply closed. Either way the accept loop never waits on a client.
//
// Accepted connections keep the io.ReaderFrom of the connection they wrap,
// so net/http still hands files to sendfile.
//
// Budget caps the other thing many clients at once could exhaust: the
// memory of requests whose work grows with the data (a listing of a huge
// folder), shared by all of them, with no waiting either, and fairly: one
// client holds at most a share of it.
package limit

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"largo/internal/netconn"
)

// Config sets the caps. The zero value caps nothing.
type Config struct {
	// Max is the most connections held at once; zero means no cap.
	Max int
	// PerIP is the most connections held at once from one client
	// address; zero means no cap.
	PerIP int
	// Answer503 makes refused connections get a plain-HTTP 503 response
	// before they are closed. Leave it off for TLS listeners.
	Answer503 bool
	// RetryAfter is the Retry-After value of that response; zero means
	// five seconds.
	RetryAfter time.Duration
	// Refused, when set, is called for every refused connection.
	Refused func(remote net.Addr)
	// Linger is how long a connection asked to linger (Linger) reads and
	// discards what its client still sends after the server is done with
	// it, before it closes; zero means it closes at once.
	Linger time.Duration

	// Trusted are the networks of trusted proxies. A proxy's connection
	// carries the requests of many clients in turn, so it is not counted
	// against PerIP, only against Max; which client sent a request is the
	// HTTP server's to learn, from the proxy's fields.
	Trusted []netip.Prefix
	// ProxyHeader reads a PROXY protocol header (version 1 or 2) at the
	// start of a connection from a Trusted address, when it begins with
	// one: the connection's RemoteAddr is then the client the header
	// names, and the connection is counted against PerIP for that client.
	// A header of the LOCAL command, or of no internet address, leaves
	// the proxy's own. From any other address no header is read: it
	// reaches the server as the connection's first bytes, which an HTTP
	// server refuses.
	ProxyHeader bool
	// HeaderTimeout bounds the wait for a PROXY header; zero means ten
	// seconds.
	HeaderTimeout time.Duration
	// BadHeader, when set, is called for a connection from a trusted
	// proxy whose PROXY header is malformed, or late: it is closed.
	BadHeader func(remote net.Addr, err error)
}

// maxLingerBytes bounds what one lingering connection discards: a client
// that sends more has not read its answer and is not going to.
const maxLingerBytes = 64 << 20

// maxAnswering bounds the goroutines that answer refused connections.
const maxAnswering = 64

// Listener is a net.Listener that enforces a Config. It is safe for
// concurrent use.
type Listener struct {
	net.Listener
	cfg       Config
	answering chan struct{}

	mu    sync.Mutex
	total int
	byIP  map[string]int

	fdMu  sync.Mutex
	spare reserve // a descriptor for turning clients away (fds.go)
}

// Wrap returns a Listener that enforces cfg on l.
func Wrap(l net.Listener, cfg Config) *Listener {
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 10 * time.Second
	}
	ll := &Listener{Listener: l, cfg: cfg, answering: make(chan struct{}, maxAnswering), byIP: map[string]int{}}
	ll.spare.take()
	return ll
}

// Close closes the listener and lets its reserve descriptor go.
func (l *Listener) Close() error {
	l.fdMu.Lock()
	l.spare.release()
	l.fdMu.Unlock()
	return l.Listener.Close()
}

// Accept returns the next connection within the caps, turning away those
// beyond them.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if outOfFiles(err) && l.shed() {
				continue
			}
			return nil, err
		}
		ip, trusted := hostOf(c.RemoteAddr()), l.trusts(c.RemoteAddr())
		if trusted {
			ip = "" // a proxy's: not counted per address
		}
		if l.acquire(ip) {
			cc := &conn{Conn: c, l: l, ip: ip, linger: l.cfg.Linger}
			if trusted && l.cfg.ProxyHeader {
				cc.hello = &hello{}
			}
			return cc, nil
		}
		if l.cfg.Refused != nil {
			l.cfg.Refused(c.RemoteAddr())
		}
		l.refuse(c)
	}
}

// trusts reports whether a is a trusted proxy's address.
func (l *Listener) trusts(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok || len(l.cfg.Trusted) == 0 {
		return false
	}
	ip := ta.AddrPort().Addr().Unmap().WithZone("")
	for _, n := range l.cfg.Trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Open returns the number of connections held now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// acquire takes a place for a connection from ip ("": one not counted
// per address), if the caps leave one.
func (l *Listener) acquire(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Max > 0 && l.total >= l.cfg.Max {
		return false
	}
	if ip != "" && l.cfg.PerIP > 0 && l.byIP[ip] >= l.cfg.PerIP {
		return false
	}
	l.total++
	if ip != "" {
		l.byIP[ip]++
	}
	return true
}

// adopt counts c, a proxy's connection so far counted only in the total,
// for the client ip its PROXY header named. It reports false when that
// client has no place left; a connection already closed is left alone.
func (l *Listener) adopt(c *conn, ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return true
	}
	if l.cfg.PerIP > 0 && l.byIP[ip] >= l.cfg.PerIP {
		return false
	}
	l.byIP[ip]++
	c.ip = ip
	return true
}

// release frees c's place.
func (l *Listener) release(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	c.released = true
	if c.ip == "" {
		return
	}
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
}

// refuse turns a connection away: with a 503 if a goroutine is free for
// it, else by closing it.
func (l *Listener) refuse(c net.Conn) {
	if !l.cfg.Answer503 {
		c.Close()
		return
	}
	select {
	case l.answering <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.answering }()
		answer503(c, nil, l.cfg.RetryAfter, 2*time.Second)
	}()
}

// answer503 reads the request head for at most wait, so that closing
// does not reset the connection under the client's feet, and answers 503.
// head is what was read of it already.
func answer503(c net.Conn, head []byte, retry, wait time.Duration) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	buf := make([]byte, 4096)
	for len(head) < 16<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	const body = "too many connections, retry later\n"
	io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\n"+
		"Retry-After: "+strconv.Itoa(int(max(retry.Seconds(), 1)))+"\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n"+
		"Connection: close\r\n\r\n"+body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// hostOf returns the IP of a remote address, without the port.
func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn is an accepted connection that frees its place when closed.
type conn struct {
	net.Conn
	l         *Listener
	once      sync.Once
	linger    time.Duration
	lingering atomic.Bool
	// hello reads a trusted proxy's PROXY header, nil for a connection
	// that may send none (proxy.go).
	hello *hello

	// Under l.mu:
	ip       string // the address the connection is counted for, "" none
	released bool   // its place is freed
}

// Linger asks c to linger when it is closed: to shut its sending side,
// then read and discard what the client still sends, for at most the
// Config's Linger and maxLingerBytes, until the client closes its side.
// A client that has not read the answer it was sent would otherwise meet
// a reset, which throws that answer away (package transfer asks this of
// a connection whose request body it gave up).
func (c *conn) Linger() { c.lingering.Store(true) }

// Close implements net.Conn.
func (c *conn) Close() error {
	if c.linger > 0 && c.lingering.Swap(false) {
		c.discard()
	}
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// discard shuts the sending side and reads what the client still sends
// until it closes, for a bounded time and number of bytes.
func (c *conn) discard() {
	c.CloseWrite()
	c.Conn.SetReadDeadline(time.Now().Add(c.linger))
	var buf [4 << 10]byte
	for n := 0; n < maxLingerBytes; {
		m, err := c.Conn.Read(buf[:])
		n += m
		if err != nil {
			return
		}
	}
}

// ReadFrom passes the source to the wrapped connection's ReadFrom, where
// *net.TCPConn uses sendfile for files.
func (c *conn) ReadFrom(r io.Reader) (int64, error) { return netconn.ReadFrom(c.Conn, r) }

// NetConn returns the wrapped connection.
func (c *conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the sending side, as net/http does before closing.
func (c *conn) CloseWrite() error { return netconn.CloseWrite(c.Conn) }
