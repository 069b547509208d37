package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCPConn is one TCP connection of a process, as /proc/PID/net/tcp shows
// it.
type TCPConn struct {
	// State is the kernel's state code: "01" established, "08" close-wait
	// (the peer closed, the process has not), and so on.
	State string
	// TxQueue and RxQueue are the bytes waiting to be sent and those
	// received but not yet read by the process.
	TxQueue, RxQueue int64
}

// Idle reports whether the connection is established with nothing in
// flight either way: a kept-alive connection waiting in a pool, as opposed
// to one carrying an answer nobody reads or half-closed and never closed.
func (c TCPConn) Idle() bool { return c.State == tcpEstablished && c.TxQueue == 0 && c.RxQueue == 0 }

// TCP states of /proc/net/tcp that matter here.
const (
	tcpEstablished = "01"
	tcpListen      = "0A"
)

// TCPConnsTo returns the TCP connections of pid (sockets it holds open,
// listening ones left out) whose remote port is port, on any address: the
// connections a server holds to a store, say.
func TCPConnsTo(pid, port int) ([]TCPConn, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var conns []TCPConn
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "net", table))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c, err := parseConns(b, port, inodes)
		if err != nil {
			return nil, fmt.Errorf("proc: net/%s: %v", table, err)
		}
		conns = append(conns, c...)
	}
	return conns, nil
}

// socketInodes returns the inodes of the sockets pid has open.
func socketInodes(pid int) (map[string]bool, error) {
	p, err := open(pid)
	if err != nil {
		return nil, err
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, target := range targets { // "" for one closed while we looked
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	return inodes, nil
}

// parseConns returns the connections of a /proc/net/tcp table whose remote
// port is port, whose state is not listening, and whose inode is in
// inodes.
func parseConns(table []byte, port int, inodes map[string]bool) ([]TCPConn, error) {
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Scan() // the header
	var conns []TCPConn
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return nil, fmt.Errorf("short line %q", sc.Text())
		}
		_, rport, ok := strings.Cut(f[2], ":")
		if !ok {
			return nil, fmt.Errorf("bad address %q", f[2])
		}
		p, err := strconv.ParseUint(rport, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port %q", rport)
		}
		if int(p) != port || f[3] == tcpListen || !inodes[f[9]] {
			continue
		}
		tx, rx, ok := strings.Cut(f[4], ":")
		if !ok {
			return nil, fmt.Errorf("bad queues %q", f[4])
		}
		c := TCPConn{State: f[3]}
		if c.TxQueue, err = strconv.ParseInt(tx, 16, 64); err == nil {
			c.RxQueue, err = strconv.ParseInt(rx, 16, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("bad queues %q", f[4])
		}
		conns = append(conns, c)
	}
	return conns, sc.Err()
}
