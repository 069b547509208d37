package activation

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// handOver puts the descriptors of files at consecutive numbers from a
// high one, as a manager would from 3, and returns the first.
func handOver(t *testing.T, files ...*os.File) int {
	t.Helper()
	const first = 200
	for i, f := range files {
		if err := syscall.Dup3(int(f.Fd()), first+i, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range files {
			syscall.Close(first + i) // already closed when taken: EBADF is fine
		}
	})
	return first
}

func tcpFile(t *testing.T) (*os.File, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, l.Addr().String()
}

// TestListeners takes two sockets, named, and a connection made before
// they were taken is accepted by the listener that took them.
func TestListeners(t *testing.T) {
	fa, addrA := tcpFile(t)
	fb, addrB := tcpFile(t)
	queued, err := net.Dial("tcp", addrA)
	if err != nil {
		t.Fatal(err)
	}
	defer queued.Close()
	first := handOver(t, fa, fb)
	pid := os.Getpid()
	ls, err := listenersFrom(envOf(map[string]string{
		"LISTEN_PID": strconv.Itoa(pid), "LISTEN_FDS": "2", "LISTEN_FDNAMES": "http:admin",
	}), pid, first)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	if len(ls) != 2 || ls[0].Name != "http" || ls[1].Name != "admin" {
		t.Fatalf("listeners %+v, want http and admin", ls)
	}
	if ls[0].Addr().String() != addrA || ls[1].Addr().String() != addrB {
		t.Fatalf("addresses %v %v, want %s %s", ls[0].Addr(), ls[1].Addr(), addrA, addrB)
	}
	// The inherited descriptors are closed: only the listeners' own remain.
	for i := range 2 {
		if _, err := unix.FcntlInt(uintptr(first+i), unix.F_GETFD, 0); err != unix.EBADF {
			t.Errorf("descriptor %d still open after being taken (%v)", first+i, err)
		}
	}
	go func() {
		c, err := ls[0].Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("hello\n"))
	}()
	line, err := bufio.NewReader(queued).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("queued connection read %q, %v", line, err)
	}
}

func TestListenersNone(t *testing.T) {
	pid := os.Getpid()
	for name, env := range map[string]map[string]string{
		"unset":         {},
		"other process": {"LISTEN_PID": strconv.Itoa(pid + 1), "LISTEN_FDS": "1"},
		"no LISTEN_PID": {"LISTEN_FDS": "1"},
		"zero sockets":  {"LISTEN_PID": strconv.Itoa(pid), "LISTEN_FDS": "0"},
	} {
		ls, err := listenersFrom(envOf(env), pid, 200)
		if err != nil || len(ls) != 0 {
			t.Errorf("%s: %v, %v; want none", name, ls, err)
		}
	}
}

func TestListenersRefused(t *testing.T) {
	pid := os.Getpid()
	if _, err := listenersFrom(envOf(map[string]string{"LISTEN_PID": strconv.Itoa(pid), "LISTEN_FDS": "two"}), pid, 200); err == nil {
		t.Error("LISTEN_FDS=two accepted")
	}
	// A listening socket, then a regular file: the file is refused and
	// the socket taken before it is closed again.
	fa, addr := tcpFile(t)
	reg, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	first := handOver(t, fa, reg)
	fa.Close() // the handed-over copy is then the socket's only descriptor
	ls, err := listenersFrom(envOf(map[string]string{"LISTEN_PID": strconv.Itoa(pid), "LISTEN_FDS": "2"}), pid, first)
	if err == nil || len(ls) != 0 {
		t.Fatalf("a regular file taken as a socket: %v, %v", ls, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the socket taken before the refused one still listens")
	}
}
