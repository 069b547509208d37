package transfer

import (
	"crypto/tls"
	"io"
	"net"
	"strconv"
)

// Large file bodies sent by the connection itself.
//
// net/http sends a file body with sendfile from its response's ReadFrom,
// which takes a 32 KiB copy buffer from its pool on entry and gives it
// back on return (it copies the first 512 bytes through it, to sniff a
// content type that largo always sets). The sendfile of the whole body
// happens in between, so a download holds a buffer for as long as its
// client takes to read it: a thousand downloads in flight hold a thousand
// buffers, 32 MB of heap.
//
// So the large file body of a GET over plain HTTP/1 (not TLS, which
// copies through buffers of its own), when its handler called
// SendFilesBy, leaves by the connection's own ReadFrom: sendfile with no
// buffer. The head is flushed first, then the segments go to the
// connection as they would have gone through net/http. net/http has not
// counted those bytes, and it does not keep a connection alive after a
// response it counts short of its Content-Length, so the answer says
// Connection: close, and the client opens a new connection for its next
// request: one handshake after at least directBody bytes. Smaller bodies,
// HEAD, and every other answer keep their connection.

// directBody is the smallest body the connection sends itself.
const directBody = 16 << 20

// SendFilesBy lets a large file body of r leave by c, the request's
// connection (ConnOf of its context), rather than through net/http. Call
// it before the answer begins, for a GET whose body will be an
// operating-system file: the answer says Connection: close as it begins,
// whatever its body turns out to be.
func (r *Response) SendFilesBy(c net.Conn) { r.conn = c }

// sendsItself decides, as a 200 or 206 answer begins, whether its body
// is sent by the connection itself, and if so says Connection: close and
// returns the connection's ReadFrom.
func (r *Response) sendsItself() io.ReaderFrom {
	if _, http1 := r.rw.(io.ReaderFrom); !http1 {
		return nil
	}
	h := r.rw.Header()
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err != nil || n < directBody || h.Get("Content-Encoding") != "" {
		return nil
	}
	rf := sendfileConn(r.conn)
	if rf != nil {
		h.Set("Connection", "close")
	}
	return rf
}

// sendfileConn returns c as an io.ReaderFrom when it sends files with
// sendfile: a TCP connection, bare or behind wrappers that give it up
// through NetConn and pass ReadFrom through. A TLS connection, or
// anything else, gives nil.
func sendfileConn(c net.Conn) io.ReaderFrom {
	rf, ok := c.(io.ReaderFrom)
	if !ok {
		return nil
	}
	for c != nil {
		switch t := c.(type) {
		case *tls.Conn:
			return nil
		case *net.TCPConn:
			return rf
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
			if _, ok := c.(io.ReaderFrom); !ok {
				return nil
			}
		default:
			return nil
		}
	}
	return nil
}
