package limit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A TCP proxy in front (HAProxy, nginx's stream module, a cloud load
// balancer) can name each connection's client in a PROXY protocol header,
// the connection's first bytes: a line of text in version 1, a binary
// block in version 2. A Listener with Config.ProxyHeader reads it from
// trusted proxies only, and lazily: in the connection's own goroutine, on
// its first Read or RemoteAddr (net/http asks RemoteAddr first), never in
// the accept loop, which a proxy that sends nothing must not hold. A
// connection without a header is served as it is: an HTTP request cannot
// begin like either version's signature.

// The signatures that begin a PROXY header.
var (
	sigV1 = []byte("PROXY ")
	sigV2 = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// Bounds of a header.
const (
	maxV1Line = 107 // the longest line version 1 allows, CRLF included
	v2Fixed   = 16  // the fixed part of version 2
)

var (
	errHeader  = errors.New("malformed PROXY protocol header")
	errRefused = errors.New("too many connections from the client the PROXY header names")
)

// hello is what a connection's PROXY header said.
type hello struct {
	once   sync.Once
	remote net.Addr // the client it names, or the proxy's own address
	rest   []byte   // bytes read past the header, the connection's next
	err    error    // the header could not be read, or the client was refused
}

// greet reads c's PROXY header, once.
func (c *conn) greet() {
	c.hello.once.Do(c.readHello)
}

// readHello reads the header, within the Config's HeaderTimeout, and
// counts the connection for the client it names.
func (c *conn) readHello() {
	h, cfg := c.hello, &c.l.cfg
	h.remote = c.Conn.RemoteAddr()
	c.Conn.SetReadDeadline(time.Now().Add(cfg.HeaderTimeout))
	client, rest, err := readProxyHeader(c.Conn)
	c.Conn.SetReadDeadline(time.Time{})
	h.rest = rest
	if err != nil {
		h.err = err
		if cfg.BadHeader != nil {
			cfg.BadHeader(h.remote, err)
		}
		c.Conn.Close()
		return
	}
	if client == nil {
		return // the proxy's own connection (LOCAL), or no header
	}
	h.remote = client
	if c.l.adopt(c, hostOf(client)) {
		return
	}
	h.err = errRefused
	if cfg.Refused != nil {
		cfg.Refused(client)
	}
	if cfg.Answer503 {
		answer503(c.Conn, rest, cfg.RetryAfter, 2*time.Second)
		return
	}
	c.Conn.Close()
}

// Read implements net.Conn: after a PROXY header, from what follows it.
func (c *conn) Read(b []byte) (int, error) {
	if c.hello != nil {
		c.greet()
		h := c.hello
		if h.err != nil {
			return 0, h.err
		}
		if len(h.rest) > 0 {
			n := copy(b, h.rest)
			h.rest = h.rest[n:]
			return n, nil
		}
	}
	return c.Conn.Read(b)
}

// RemoteAddr implements net.Conn: the client a PROXY header named, if
// one did.
func (c *conn) RemoteAddr() net.Addr {
	if c.hello == nil {
		return c.Conn.RemoteAddr()
	}
	c.greet()
	return c.hello.remote
}

// readProxyHeader reads a PROXY header at the start of r, if r begins
// with one, and returns the client it names (nil for none: no header, the
// LOCAL command, or an address that is not an internet one) and the bytes
// it read past the header.
func readProxyHeader(r io.Reader) (client net.Addr, rest []byte, err error) {
	br := bufio.NewReaderSize(r, 256)
	version := 0
	for n := 1; version == 0; n++ {
		b, err := br.Peek(n)
		switch {
		case err != nil && n == 1:
			// Nothing came (the proxy closed, or is slow to send its
			// request): no header, and the connection's reads say the rest.
			return nil, nil, nil
		case err != nil:
			return nil, nil, fmt.Errorf("%w: %w", errHeader, err)
		}
		v1, v2 := bytes.HasPrefix(sigV1, b), bytes.HasPrefix(sigV2, b)
		switch {
		case !v1 && !v2:
			return nil, buffered(br), nil // no header: the connection's own bytes
		case v1 && n == len(sigV1):
			version = 1
		case v2 && n == len(sigV2):
			version = 2
		}
	}
	if version == 1 {
		client, err = readV1(br)
	} else {
		client, err = readV2(br)
	}
	if err != nil {
		return nil, nil, err
	}
	return client, buffered(br), nil
}

// buffered returns a copy of what br holds beyond what was read of it.
func buffered(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return bytes.Clone(b)
}

// readV1 reads version 1's line:
//
//	PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n
//	PROXY TCP6 2001:db8::1 2001:db8::2 56324 443\r\n
//	PROXY UNKNOWN[ anything]\r\n
func readV1(br *bufio.Reader) (net.Addr, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxV1Line:
		return nil, fmt.Errorf("%w: a version 1 line longer than %d bytes", errHeader, maxV1Line)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errHeader, err)
	case !bytes.HasSuffix(line, []byte("\r\n")):
		return nil, fmt.Errorf("%w: a version 1 line not ended by CRLF", errHeader)
	}
	f := strings.Split(string(line[len(sigV1):len(line)-2]), " ")
	if f[0] == "UNKNOWN" {
		return nil, nil
	}
	if len(f) != 5 || f[0] != "TCP4" && f[0] != "TCP6" {
		return nil, fmt.Errorf("%w: version 1: %q", errHeader, line)
	}
	src, err1 := netip.ParseAddr(f[1])
	dst, err2 := netip.ParseAddr(f[2])
	sport, err3 := parsePort(f[3])
	_, err4 := parsePort(f[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil ||
		src.Zone() != "" || src.Is4() != (f[0] == "TCP4") || dst.Is4() != (f[0] == "TCP4") {
		return nil, fmt.Errorf("%w: version 1: %q", errHeader, line)
	}
	return tcpAddr(src, sport), nil
}

// parsePort reads a port in decimal, without a sign or leading zeros.
func parsePort(s string) (uint16, error) {
	if len(s) > 1 && s[0] == '0' {
		return 0, errHeader
	}
	p, err := strconv.ParseUint(s, 10, 16)
	return uint16(p), err
}

// readV2 reads version 2's block: the signature, a byte of version (2)
// and command (LOCAL 0, PROXY 1), a byte of family (AF_INET 1, AF_INET6
// 2, AF_UNIX 3, or unspecified 0) and transport, the length of what
// follows, and the addresses; any TLVs after them are skipped.
func readV2(br *bufio.Reader) (net.Addr, error) {
	head, err := br.Peek(v2Fixed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errHeader, err)
	}
	verCmd, family, size := head[12], head[13], int(binary.BigEndian.Uint16(head[14:16]))
	br.Discard(v2Fixed)
	if verCmd>>4 != 2 || verCmd&0xf > 1 {
		return nil, fmt.Errorf("%w: version 2: version and command %#x", errHeader, verCmd)
	}
	local := verCmd&0xf == 0
	var need int
	switch family >> 4 {
	case 1:
		need = 12 // two IPv4 addresses and two ports
	case 2:
		need = 36 // two IPv6 addresses and two ports
	case 0, 3:
	default:
		return nil, fmt.Errorf("%w: version 2: family %#x", errHeader, family)
	}
	if local || need == 0 {
		if _, err := br.Discard(size); err != nil {
			return nil, fmt.Errorf("%w: %w", errHeader, err)
		}
		return nil, nil
	}
	if size < need {
		return nil, fmt.Errorf("%w: version 2: %d bytes of addresses, fewer than %d", errHeader, size, need)
	}
	var b [36]byte
	if _, err := io.ReadFull(br, b[:need]); err != nil {
		return nil, fmt.Errorf("%w: %w", errHeader, err)
	}
	if _, err := br.Discard(size - need); err != nil {
		return nil, fmt.Errorf("%w: %w", errHeader, err)
	}
	var src netip.Addr
	var port uint16
	if need == 12 {
		src, port = netip.AddrFrom4([4]byte(b[0:4])), binary.BigEndian.Uint16(b[8:10])
	} else {
		src, port = netip.AddrFrom16([16]byte(b[0:16])), binary.BigEndian.Uint16(b[32:34])
	}
	return tcpAddr(src, port), nil
}

func tcpAddr(a netip.Addr, port uint16) *net.TCPAddr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a.Unmap(), port))
}
