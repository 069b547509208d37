package quick

import (
	"bytes"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"largo/internal/netconn"
)

// Replays. Most of what the lane spends on a small answer is not the
// system calls but the Go work around them: net/http's parser and the
// handler's general path (docs/BENCHMARKS.md: a raw connection answering
// from memory costs a fifth of it). So an answer the handler marks as
// one it would give again, the same, to the same question (Offer: a kept
// file's whole answer to anyone), is kept with the request head it
// answered, and a later head that is the same question is answered with
// it, its Date made new, without parsing it into a request or running
// the handler: if the handler says it still would (Kept.Still), which it
// asks of the same gate and open-file cache as its own path, and it logs
// and counts it (Kept.Served) as its own.
//
// "The same question" is narrow on purpose: a GET or HEAD of HTTP/1.1
// whose target is a plain path (no query, no escape, no dot segment, not
// the server's own endpoints) and whose fields are Host and at most
// User-Agent, Accept and Connection: keep-alive, nothing else, each
// once. A credential, a cookie, a condition, a range, an encoding, an
// origin, a proxy's field: any other field, and the request goes the
// handler's way, as before. What a head may say is parsed here strictly;
// its key is its method and target.

// Kept is an answer the handler offered to be sent again (Offer).
// Implementations must be safe for concurrent use.
type Kept interface {
	// Body returns the answer's body, the bytes the handler wrote.
	Body() []byte
	// Still reports whether the handler would answer a request from
	// remote naming host the same now.
	Still(host, remote string) bool
	// Served records one answer sent again, as the handler records its
	// own: the access log and the metrics. sent is the body bytes sent,
	// err the write's failure.
	Served(method, target, remote string, sent int64, took time.Duration, err error)
}

// Offer tells the lane that the answer the handler is writing to the
// request on conn (as an http.Server's ConnContext saw it) may be sent
// again to the same question while k.Still says so. On a connection not
// in a lane, or for a request the lane did not parse, it does nothing.
func Offer(conn net.Conn, k Kept) {
	if c, ok := netconn.Find[*Conn](conn); ok && c.answering {
		c.offer = k
	}
}

// maxReplays bounds the answers a Listener keeps: past it, they are
// forgotten all at once and kept again as they come.
const maxReplays = 4096

// replay is a kept answer: the handler's Kept, and its head without the
// Date field nor the blank line that ends it.
type replay struct {
	kept Kept
	head []byte
}

// replays are a Listener's kept answers by question.
type replays struct {
	mu sync.RWMutex
	m  map[string]*replay
}

func (rs *replays) get(key []byte) *replay {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return rs.m[string(key)]
}

func (rs *replays) put(key []byte, r *replay) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil || len(rs.m) >= maxReplays {
		rs.m = make(map[string]*replay)
	}
	rs.m[string(key)] = r
}

// drop forgets r, kept for key, unless another answer took its place.
func (rs *replays) drop(key []byte, r *replay) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m[string(key)] == r {
		delete(rs.m, string(key))
	}
}

// question is a head parsed as one a replay may answer.
type question struct {
	head           bool   // HEAD, not GET
	method, target []byte // views of the head
	host           []byte
}

// maxQuestionFields bounds the fields of a question.
const maxQuestionFields = 4

// parseQuestion parses head, a request's head read whole (ending with
// the blank line), as a question a replay may answer; false for any
// other head, which goes the handler's way. It allocates nothing.
func parseQuestion(head []byte) (q question, ok bool) {
	line, rest, ok := bytes.Cut(head, crlf)
	if !ok {
		return q, false
	}
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		q.method, line = line[:3], line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		q.method, line, q.head = line[:4], line[5:], true
	default:
		return q, false
	}
	target, ok := bytes.CutSuffix(line, []byte(" HTTP/1.1"))
	if !ok || !plainTarget(target) {
		return q, false
	}
	q.target = target
	seen := 0 // the fields seen, one bit each
	for n := 0; ; n++ {
		var field []byte
		field, rest, ok = bytes.Cut(rest, crlf)
		if !ok {
			return q, false
		}
		if len(field) == 0 {
			break // the blank line
		}
		if n == maxQuestionFields {
			return q, false
		}
		name, value, ok := bytes.Cut(field, []byte(":"))
		if !ok {
			return q, false
		}
		value = bytes.Trim(value, " \t")
		if !printable(value) {
			return q, false
		}
		var bit int
		switch {
		case asciiEqualFold(name, "Host"):
			bit = 1
			if len(value) == 0 || !httpguts.ValidHostHeader(string(value)) {
				return q, false
			}
			q.host = value
		case asciiEqualFold(name, "User-Agent"):
			bit = 2
		case asciiEqualFold(name, "Accept"):
			bit = 4
		case asciiEqualFold(name, "Connection"):
			bit = 8
			if !asciiEqualFold(value, "keep-alive") {
				return q, false
			}
		default:
			return q, false
		}
		if seen&bit != 0 {
			return q, false
		}
		seen |= bit
	}
	if seen&1 == 0 || len(rest) != 0 {
		return q, false
	}
	return q, true
}

// plainTarget reports whether t is a path a replay may answer: from the
// root, of the characters a path needs no escape for, with no empty or
// dot segment (no "//", no "/."), and not the server's own endpoints.
func plainTarget(t []byte) bool {
	if len(t) == 0 || t[0] != '/' || bytes.HasPrefix(t, []byte("/_largo")) {
		return false
	}
	for i, c := range t {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '/':
			if i+1 < len(t) && (t[i+1] == '/' || t[i+1] == '.') {
				return false
			}
		case bytes.IndexByte([]byte("-._~!$&'()*+,;=:@"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// printable reports whether v holds only visible ASCII, spaces and tabs.
func printable(v []byte) bool {
	for _, c := range v {
		if (c < ' ' || c > '~') && c != '\t' {
			return false
		}
	}
	return true
}

// asciiEqualFold reports whether b is s, ignoring the case of ASCII
// letters.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

var crlf = []byte("\r\n")

// appendKey appends q's key: its method and target. The Host is not in
// it (a kept file's answer says nothing of it, and a key per spelling of
// a Host would let a client fill the table with names): Kept.Still is
// asked whether the server serves it.
func appendKey(b []byte, q question) []byte {
	b = append(b, q.method...)
	b = append(b, ' ')
	return append(b, q.target...)
}

// replay answers head with a kept answer when it is a question one
// answers and the handler says it still would. It reports whether it
// answered, and whether the connection stays open (not when the answer
// could not be sent whole).
func (c *Conn) replay(head []byte) (answered, keep bool) {
	if c.l.closing.Load() {
		return false, true
	}
	q, ok := parseQuestion(head)
	if !ok {
		return false, true
	}
	c.key = appendKey(c.key[:0], q)
	r := c.l.replays.get(c.key)
	if r == nil {
		return false, true
	}
	if c.remote == "" {
		c.remote = c.Conn.RemoteAddr().String()
	}
	start := time.Now()
	if !r.kept.Still(string(q.host), c.remote) {
		c.l.replays.drop(c.key, r)
		return false, true
	}
	c.served++
	bp := outs.Get().(*[]byte)
	b := append((*bp)[:0], r.head...)
	b = append(b, "Date: "...)
	b = append(b, c.l.dates.now()[0]...)
	b = append(b, "\r\n\r\n"...)
	head0 := len(b)
	if !q.head {
		b = append(b, r.kept.Body()...)
	}
	w := response{c: c}
	n, err := w.write(b)
	sent := int64(max(n-head0, 0))
	*bp = b[:0]
	if cap(b) <= 2*maxBuffered {
		outs.Put(bp)
	}
	r.kept.Served(string(q.method), string(q.target), c.remote, sent, time.Since(start), err)
	return true, err == nil
}

// keep keeps the answer w sent for head when the handler offered it and
// it is whole: a 200 with its length and no cookie, the connection left
// open.
func (c *Conn) keep(head []byte, w *response) {
	k := c.offer
	c.offer = nil
	if k == nil || w.status != 200 || w.closing || w.chunked || w.err != nil || w.cl < 0 {
		return
	}
	if _, ok := w.header["Set-Cookie"]; ok {
		return // a requester's own, whatever the handler said
	}
	if w.req.Method == "GET" && (w.written != w.cl || int64(len(k.Body())) != w.cl) {
		return
	}
	q, ok := parseQuestion(head)
	if !ok {
		return
	}
	date := w.header["Date"]
	delete(w.header, "Date")
	b := appendHead(nil, w.status, w.header)
	w.header["Date"] = date
	c.key = appendKey(c.key[:0], q)
	c.l.replays.put(c.key, &replay{kept: k, head: b[:len(b)-2]})
}
