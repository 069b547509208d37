// Package unread makes clients that do not read their answers: what a
// test of the server's progress deadlines and budgets needs to hold a
// request in flight. A connection it dials offers a small receive window
// from its first packet, so that the server's writes soon wait on it, and
// never on the socket buffers' autotuning.
//
// It is for tests. It keeps no state; its functions are safe for
// concurrent use.
package unread

import (
	"net"
	"syscall"
	"testing"
)

// Buffer is the receive buffer of a connection Dial makes.
const Buffer = 4 << 10

// Dial connects to addr over TCP with a receive buffer of Buffer bytes,
// set before the connection is made. The connection is closed when the
// test ends.
func Dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, Buffer)
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
