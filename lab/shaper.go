package lab

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// The shaper makes a long path out of loopback, where the kernel offers
// no netem: a TCP proxy on 127.0.0.1 in the lab's own process, between a
// client and a server. Every connection through it is a path of its own,
// each way:
//
//   - a one-way delay of half the round trip: what is read from one side
//     is timestamped and written to the other only once the delay has
//     passed, so a request answered at once takes a round trip, and a
//     new connection one more (its handshake: the client's first bytes
//     leave a round trip after it connected);
//   - a rate cap: the link sends one chunk after another at the rate,
//     and the proxy reads the next chunk only once the link is free, so
//     that the sender is held back by its own socket, as behind a
//     bottleneck;
//   - a window: at most so many bytes sent and not yet acknowledged, an
//     acknowledgement coming back a round trip after its bytes left, so
//     that one stream moves at most a window per round trip, as TCP does
//     over a long path.
//
// A real path also loses packets and shares its bottleneck; this one
// does neither: each connection has the whole of its cap.

// shapedPath is what every connection through a shaper is given.
type shapedPath struct {
	// RTT is the round trip: each direction delays its bytes by half.
	RTT time.Duration
	// Rate caps each direction of each connection, in bytes per second;
	// 0 means no cap.
	Rate int64
	// Window bounds the bytes in flight each way on each connection; 0
	// means maxInFlight.
	Window int64
}

// Bounds of the shaper's chunks and of what it holds per direction.
const (
	maxChunk    = 64 << 10
	minChunk    = 4 << 10
	maxInFlight = 64 << 20
	sockBuffer  = 4 << 20 // the receive buffer asked for each socket
	// paceAhead is how far ahead of the link a chunk may be read.
	paceAhead = 10 * time.Millisecond
	// paceSlack is how late a chunk may be read and still leave when the
	// link became free: a sleep that overruns (on a busy machine, by
	// milliseconds) does not cost rate.
	paceSlack = 50 * time.Millisecond
)

// shaper is a running shaping proxy.
type shaper struct {
	ln     net.Listener
	target string
	path   shapedPath
	chunk  int // bytes read at once
	bufs   sync.Pool
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	open   int // paths open now
	peak   int // the most paths open at once
}

// startShaper listens on a loopback port and forwards every connection
// to target (host:port) over p.
func startShaper(target string, p shapedPath) (*shaper, error) {
	if p.RTT < 0 || p.Rate < 0 || p.Window < 0 {
		return nil, errors.New("shaper: negative round trip, rate or window")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	chunk := maxChunk
	if p.Rate > 0 {
		// About 10 ms of the rate, so that a slow link is smooth.
		chunk = int(min(max(p.Rate/100, minChunk), maxChunk))
	}
	s := &shaper{ln: ln, target: target, path: p, chunk: chunk, conns: map[net.Conn]struct{}{}}
	s.bufs.New = func() any { b := make([]byte, chunk); return &b }
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// addr is where the shaper listens, host:port.
func (s *shaper) addr() string { return s.ln.Addr().String() }

// close stops accepting, cuts every connection and waits for them.
func (s *shaper) close() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *shaper) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.handle(c, time.Now())
	}
}

// track records the connections of one path so that close can cut them,
// and counts the path; false if the shaper is closing.
func (s *shaper) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for _, c := range cs {
		s.conns[c] = struct{}{}
	}
	s.open++
	s.peak = max(s.peak, s.open)
	return true
}

func (s *shaper) untrack(cs ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		delete(s.conns, c)
	}
	s.open--
}

// peakConns returns the most connections that were open through the
// shaper at once.
func (s *shaper) peakConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// handle carries one client connection, accepted at accepted, to a new
// connection to the target, each way over its own shaped line.
func (s *shaper) handle(c net.Conn, accepted time.Time) {
	defer s.wg.Done()
	u, err := net.DialTimeout("tcp", s.target, 10*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !s.track(c, u) {
		c.Close()
		u.Close()
		return
	}
	// Room to read ahead on both sockets: with a small buffer kept
	// full, the loopback's window updates wait on delayed
	// acknowledgements and the line stalls for tens of milliseconds.
	for _, x := range []net.Conn{c, u} {
		if tc, ok := x.(*net.TCPConn); ok {
			tc.SetReadBuffer(sockBuffer)
		}
	}
	p := &pair{a: c, b: u, done: make(chan struct{})}
	// The client's first bytes leave once its handshake would have
	// come back: a round trip after it connected.
	up := s.newLine(p, c, u, accepted.Add(s.path.RTT))
	down := s.newLine(p, u, c, time.Time{})
	var wg sync.WaitGroup
	for _, l := range []*line{up, down} {
		wg.Go(l.read)
		wg.Go(l.write)
	}
	wg.Wait()
	p.abort()
	s.untrack(c, u)
}

// pair is the two connections of one path; abort cuts both, ending
// both directions at once.
type pair struct {
	a, b net.Conn
	once sync.Once
	done chan struct{}
}

func (p *pair) abort() {
	p.once.Do(func() {
		close(p.done)
		p.a.Close()
		p.b.Close()
	})
}

// line is one direction of a path: a reader that takes chunks off src
// as the link and the window allow, and a writer that hands them to dst
// when they are due.
type line struct {
	s        *shaper
	p        *pair
	src, dst net.Conn
	delay    time.Duration
	window   int64
	start    time.Time  // nothing leaves before
	chunks   chan chunk // from the reader to the writer
	ackMu    sync.Mutex
	acks     []ack // acknowledgements on their way back, in order
	ackReady chan struct{}
}

// chunk is bytes on their way, due at the far end at due; end, on the
// last chunk of a direction, is io.EOF or what ended it.
type chunk struct {
	buf *[]byte
	n   int
	due time.Time
	end error
}

// ack gives back n bytes of the window at at.
type ack struct {
	at time.Time
	n  int64
}

func (s *shaper) newLine(p *pair, src, dst net.Conn, start time.Time) *line {
	w := s.path.Window
	if w <= 0 {
		w = maxInFlight
	}
	return &line{
		s: s, p: p, src: src, dst: dst, delay: s.path.RTT / 2, window: w, start: start,
		chunks: make(chan chunk, 1024), ackReady: make(chan struct{}, 1),
	}
}

// read takes chunks off src and sends them on with the time they are
// due at the far end, until src ends or the pair is cut.
func (l *line) read() {
	rate := l.s.path.Rate
	free := l.start // when the link is next free
	var inFlight int64
	var pending []ack
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		// The window: wait for acknowledgements until there is room.
		pending = append(pending, l.takeAcks()...)
		for {
			now := time.Now()
			for len(pending) > 0 && !pending[0].at.After(now) {
				inFlight -= pending[0].n
				pending = pending[1:]
			}
			if inFlight < l.window {
				break
			}
			if len(pending) == 0 {
				select {
				case <-l.ackReady:
					pending = append(pending, l.takeAcks()...)
				case <-l.p.done:
					return
				}
				continue
			}
			if !sleepUntil(t, pending[0].at, l.p.done) {
				return
			}
		}
		buf := l.s.bufs.Get().(*[]byte)
		n, err := l.src.Read((*buf)[:int(min(int64(len(*buf)), l.window-inFlight))])
		now := time.Now()
		// The link sends on from where it was, unless it has been idle.
		leave := free
		if leave.Before(now.Add(-paceSlack)) {
			leave = now
		}
		if n > 0 {
			if rate > 0 {
				leave = leave.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
			}
			free = leave
			inFlight += int64(n)
			if !l.send(chunk{buf: buf, n: n, due: leave.Add(l.delay)}) {
				return
			}
		} else {
			l.s.bufs.Put(buf)
		}
		if err != nil {
			if l.p.isCut() {
				err = net.ErrClosed
			}
			l.send(chunk{due: leave.Add(l.delay), end: err})
			return
		}
		// Held back while the link is busy: the sender waits on its own
		// socket, not in the shaper's memory.
		if rate > 0 && time.Until(free) > paceAhead && !sleepUntil(t, free.Add(-paceAhead), l.p.done) {
			return
		}
	}
}

// send hands c to the writer; false if the pair was cut.
func (l *line) send(c chunk) bool {
	select {
	case l.chunks <- c:
		return true
	case <-l.p.done:
		return false
	}
}

// takeAcks returns the acknowledgements posted since the last call.
func (l *line) takeAcks() []ack {
	l.ackMu.Lock()
	defer l.ackMu.Unlock()
	a := l.acks
	l.acks = nil
	return a
}

// write hands each chunk to dst when it is due, and acknowledges it a
// half round trip after it was written: half-closes dst at the source's
// end, cuts the pair on an error either side.
func (l *line) write() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var c chunk
		select {
		case c = <-l.chunks:
		case <-l.p.done:
			return
		}
		if !sleepUntil(t, c.due, l.p.done) {
			return
		}
		if c.end != nil {
			cw, ok := l.dst.(interface{ CloseWrite() error })
			if c.end != io.EOF || !ok || cw.CloseWrite() != nil {
				l.p.abort()
			}
			return
		}
		_, err := l.dst.Write((*c.buf)[:c.n])
		l.s.bufs.Put(c.buf)
		if err != nil {
			l.p.abort()
			return
		}
		l.ackMu.Lock()
		l.acks = append(l.acks, ack{at: time.Now().Add(l.delay), n: int64(c.n)})
		l.ackMu.Unlock()
		select {
		case l.ackReady <- struct{}{}:
		default:
		}
	}
}

// isCut reports whether the pair was cut.
func (p *pair) isCut() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// sleepUntil waits on t until at, or until done is closed (false).
func sleepUntil(t *time.Timer, at time.Time, done <-chan struct{}) bool {
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-done:
		t.Stop()
		return false
	}
}
