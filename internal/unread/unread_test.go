package unread

import (
	"net"
	"syscall"
	"testing"
)

// TestDial: the connection reaches its listener, with the small buffer
// asked for (the kernel doubles what it is given).
func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := Dial(t, ln.Addr().String())
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	raw.Control(func(fd uintptr) { got, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	if got <= 0 || got > 4*Buffer {
		t.Errorf("receive buffer %d; want about %d", got, 2*Buffer)
	}
}
