// Package netconn is what the server's connection wrappers (the caps,
// the lane, the gathering of writes) share: finding one of them beneath
// another, and passing a sendfile or a half close to the one they wrap.
package netconn

import (
	"io"
	"net"
)

// Find returns the first connection of type T at or beneath c, going down
// by NetConn (as *tls.Conn and the wrappers unwrap), and whether there is
// one.
func Find[T any](c net.Conn) (T, bool) {
	for c != nil {
		if t, ok := c.(T); ok {
			return t, true
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	var zero T
	return zero, false
}

// ReadFrom sends r on c: by c's ReadFrom where it has one (where
// *net.TCPConn uses sendfile for a file), else by copying.
func ReadFrom(c net.Conn, r io.Reader) (int64, error) {
	if rf, ok := c.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c}, r)
}

// CloseWrite shuts c's sending side where it can, as net/http does
// before it closes a connection.
func CloseWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
