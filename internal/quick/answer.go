package quick

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// maxBuffered is the most of an answer's body the lane gathers before
// it sends the head and the rest as it comes.
const maxBuffered = 64 << 10

// answerTimeout bounds the sending of an answer when the server sets no
// idle timeout: a client that reads nothing does not hold the lane.
const answerTimeout = time.Minute

// answer runs the server's handler on r, whose head is head, and sends
// its answer, kept to be sent again when the handler offered it. It
// reports whether the connection stays open: not when the client or the
// handler asked to close it, nor when the answer could not be sent whole.
func (c *Conn) answer(r *http.Request, head []byte) (keep bool) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	r = r.WithContext(ctx)
	c.served++
	// The fields' map is the connection's, cleared for each answer: a
	// handler keeps nothing of its ResponseWriter once it returned.
	if c.header == nil {
		c.header = make(http.Header, 16)
	}
	clear(c.header)
	w := &response{c: c, req: r, header: c.header, cl: -1}
	defer w.release()
	c.answering, c.offer = true, nil
	ran := w.run(c.cfg.Server.Handler)
	c.answering = false
	if !ran {
		c.offer = nil
		return false
	}
	if err := w.finish(); err != nil {
		c.offer = nil
		return false
	}
	c.keep(head, w)
	return !w.closing
}

// response is the http.ResponseWriter of a request of the lane: it
// gathers the head and the body, and sends both in one write when the
// handler returns, or the head and what it has as soon as the body
// passes maxBuffered or the handler flushes.
type response struct {
	c       *Conn
	req     *http.Request
	header  http.Header
	status  int     // 0 until WriteHeader
	cl      int64   // the Content-Length the handler set, -1 for none
	out     *[]byte // the body gathered, nil until needed
	written int64   // body bytes the handler wrote
	sent    bool    // the head is sent: what follows is written as it comes
	done    bool    // the handler returned
	chunked bool
	closing bool // close the connection after the answer
	err     error
}

// outs holds the buffers answers are gathered and headed in, between
// answers: an idle connection holds none.
var outs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func (w *response) release() {
	if w.out != nil && cap(*w.out) <= 2*maxBuffered {
		*w.out = (*w.out)[:0]
		outs.Put(w.out)
	}
	w.out = nil
}

// run calls h, and reports false when it panicked: net/http closes the
// connection then, after logging any panic but http.ErrAbortHandler.
func (w *response) run(h http.Handler) (ok bool) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		ok = false
		if v != http.ErrAbortHandler {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			w.logf("http: panic serving %v: %v\n%s", w.req.RemoteAddr, v, buf)
		}
	}()
	h.ServeHTTP(w, w.req)
	return true
}

func (w *response) logf(format string, args ...any) {
	if l := w.c.cfg.Server.ErrorLog; l != nil {
		l.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// Header implements http.ResponseWriter.
func (w *response) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter. Informational answers are
// not sent: no handler the lane takes asks for one.
func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.status != 0 || code < 200 {
		return
	}
	w.status = code
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.cl = n
		} else {
			delete(w.header, "Content-Length") // as net/http: not sent
		}
	}
}

// bodyAllowed reports whether the status may have a body.
func (w *response) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

// Write implements http.ResponseWriter.
func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.cl >= 0 && w.written+int64(len(p)) > w.cl {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.sent && int(w.written) <= maxBuffered {
		w.gather(p)
		return len(p), nil
	}
	if !w.sent {
		w.gather(p)
		return len(p), w.send()
	}
	if err := w.stream(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// gather appends p to the body gathered.
func (w *response) gather(p []byte) {
	if w.out == nil {
		w.out = outs.Get().(*[]byte)
	}
	*w.out = append(*w.out, p...)
}

// Flush implements http.Flusher: the head and what is gathered leave.
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush for http.ResponseController.
func (w *response) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.sent || w.err != nil {
		return w.err
	}
	return w.send()
}

// SetWriteDeadline is the connection's, for http.ResponseController.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.Conn.SetWriteDeadline(t) }

// SetReadDeadline is the connection's, for http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error { return w.c.Conn.SetReadDeadline(t) }

// EnableFullDuplex is for http.ResponseController: a request with no
// body reads nothing while its answer is written.
func (w *response) EnableFullDuplex() error { return nil }

// finish sends what is left of the answer once the handler returned.
func (w *response) finish() error {
	w.done = true
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.send()
	} else if w.err == nil && w.chunked {
		_, w.err = w.write([]byte("0\r\n\r\n"))
	}
	if w.cl >= 0 && w.written < w.cl && w.req.Method != http.MethodHead && w.bodyAllowed() {
		w.closing = true // the body ended short of its length
	}
	return w.err
}

// send sends the head and the body gathered, in one write: the whole
// answer when the handler is done, its beginning otherwise, with its
// length or in chunks.
func (w *response) send() error {
	w.sent = true
	var body []byte
	if w.out != nil {
		body = *w.out
	}
	h := w.header
	if _, ok := h["Date"]; !ok {
		h["Date"] = w.c.l.dates.now()
	}
	if w.req.Close || hasToken(h["Connection"], "close") {
		w.closing = true
		h["Connection"] = closeValue
	}
	head := w.req.Method == http.MethodHead
	if w.cl < 0 && w.bodyAllowed() {
		switch {
		case w.done && (!head || w.written > 0):
			h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
		case !w.done && !head:
			w.chunked = true
			h["Transfer-Encoding"] = chunkedValue
		}
	}
	if _, ok := h["Content-Type"]; !ok && w.bodyAllowed() && len(body) > 0 {
		h["Content-Type"] = []string{http.DetectContentType(body[:min(len(body), 512)])}
	}
	bp := outs.Get().(*[]byte)
	b := appendHead((*bp)[:0], w.status, h)
	if len(body) > 0 {
		if w.chunked {
			b = strconv.AppendInt(b, int64(len(body)), 16)
			b = append(b, "\r\n"...)
		}
		b = append(b, body...)
		if w.chunked {
			b = append(b, "\r\n"...)
		}
		*w.out = body[:0]
	}
	_, w.err = w.write(b)
	*bp = b[:0]
	if cap(b) <= 2*maxBuffered {
		outs.Put(bp)
	}
	return w.err
}

// stream writes p as it comes, in a chunk of its own when chunked.
func (w *response) stream(p []byte) error {
	var err error
	if w.chunked {
		_, err = w.write([]byte(strconv.FormatInt(int64(len(p)), 16) + "\r\n"))
		if err == nil {
			_, err = w.write(p)
		}
		if err == nil {
			_, err = w.write([]byte("\r\n"))
		}
	} else {
		_, err = w.write(p)
	}
	w.err = err
	return err
}

// write writes b to the connection within the idle timeout (or
// answerTimeout).
func (w *response) write(b []byte) (int, error) {
	d := w.c.cfg.Server.IdleTimeout
	if d <= 0 {
		d = answerTimeout
	}
	w.c.Conn.SetWriteDeadline(time.Now().Add(d))
	n, err := w.c.Conn.Write(b)
	w.c.Conn.SetWriteDeadline(time.Time{})
	return n, err
}

var (
	closeValue   = []string{"close"}
	chunkedValue = []string{"chunked"}
)

// hasToken reports whether a Connection field's values name tok.
func hasToken(vv []string, tok string) bool {
	for _, v := range vv {
		for o := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(o), tok) {
				return true
			}
		}
	}
	return false
}

// appendHead appends the status line and fields of an answer, as
// net/http writes them: fields of invalid names left out, line breaks in
// values made spaces.
func appendHead(head []byte, status int, h http.Header) []byte {
	head = append(head, "HTTP/1.1 "...)
	head = strconv.AppendInt(head, int64(status), 10)
	head = append(head, ' ')
	if text := http.StatusText(status); text != "" {
		head = append(head, text...)
	} else {
		head = append(head, "status code "...)
		head = strconv.AppendInt(head, int64(status), 10)
	}
	head = append(head, "\r\n"...)
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vv {
			head = append(head, k...)
			head = append(head, ": "...)
			head = appendValue(head, v)
			head = append(head, "\r\n"...)
		}
	}
	return append(head, "\r\n"...)
}

// appendValue appends v trimmed, with its line breaks made spaces.
func appendValue(b []byte, v string) []byte {
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\r', '\n':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}

// dateCache is the Date field's value, made once a second.
type dateCache struct{ v atomic.Pointer[dateValue] }

type dateValue struct {
	sec int64
	v   []string
}

func (d *dateCache) now() []string {
	now := time.Now()
	if v := d.v.Load(); v != nil && v.sec == now.Unix() {
		return v.v
	}
	v := &dateValue{sec: now.Unix(), v: []string{now.UTC().Format(http.TimeFormat)}}
	d.v.Store(v)
	return v.v
}
