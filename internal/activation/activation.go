// Package activation takes the listening sockets a service manager hands
// over at start (systemd's socket activation): descriptors from 3 on,
// counted by LISTEN_FDS, meant for the process LISTEN_PID names and named
// by LISTEN_FDNAMES. A socket made by the manager outlives the process, so
// the connections that arrive while the server restarts wait in its queue
// instead of being refused.
package activation

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// firstFD is the first descriptor handed over; 0 to 2 are the standard
// streams.
const firstFD = 3

// Listener is one socket handed over, with the name the manager gave it
// (FileDescriptorName= in a systemd socket unit; "unknown" by default).
type Listener struct {
	Name string
	net.Listener
}

// Listeners returns the sockets handed to the process pid, read from the
// environment through getenv: none when LISTEN_FDS is unset or LISTEN_PID
// names another process (a variable inherited from a parent). Each socket
// is taken over as a net.Listener whose descriptor is closed on exec, and
// the inherited descriptor is closed. A socket that is not a listening
// stream socket is an error, and then nothing is left open.
func Listeners(getenv func(string) (string, bool), pid int) ([]Listener, error) {
	return listenersFrom(getenv, pid, firstFD)
}

// listenersFrom is Listeners with the descriptors counted from first.
func listenersFrom(getenv func(string) (string, bool), pid, first int) ([]Listener, error) {
	nfds, ok := getenv("LISTEN_FDS")
	if !ok {
		return nil, nil
	}
	if p, ok := getenv("LISTEN_PID"); !ok || p != strconv.Itoa(pid) {
		return nil, nil
	}
	n, err := strconv.Atoi(nfds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("LISTEN_FDS=%q: not a count of descriptors", nfds)
	}
	var names []string
	if v, ok := getenv("LISTEN_FDNAMES"); ok && v != "" {
		names = strings.Split(v, ":")
	}
	var ls []Listener
	closeAll := func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for i := range n {
		fd := first + i
		name := "unknown"
		if i < len(names) {
			name = names[i]
		}
		l, err := take(fd, name)
		if err != nil {
			closeAll()
			return nil, err
		}
		ls = append(ls, Listener{Name: name, Listener: l})
	}
	return ls, nil
}

// take makes a net.Listener of the inherited descriptor fd and closes fd.
func take(fd int, name string) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return nil, fmt.Errorf("socket %d (%s): not a descriptor", fd, name)
	}
	defer f.Close()
	if t, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || t != 1 {
		return nil, fmt.Errorf("socket %d (%s): %w", fd, name, errNotListening)
	}
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("socket %d (%s): %v", fd, name, err)
	}
	return l, nil
}

// errNotListening is a handed-over descriptor that accepts no connections:
// a datagram socket, a connected one, or not a socket.
var errNotListening = errors.New("not a listening stream socket")
