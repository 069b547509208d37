package limit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// v2Header builds a version 2 header: command (0 LOCAL, 1 PROXY), family
// byte, the addresses' block and extra bytes (TLVs).
func v2Header(cmd, family byte, src netip.AddrPort, tlv []byte) []byte {
	var addrs []byte
	switch family >> 4 {
	case 1:
		a := src.Addr().As4()
		addrs = append(addrs, a[:]...)
		addrs = append(addrs, 198, 51, 100, 1)
		addrs = binary.BigEndian.AppendUint16(addrs, src.Port())
		addrs = binary.BigEndian.AppendUint16(addrs, 443)
	case 2:
		a := src.Addr().As16()
		addrs = append(addrs, a[:]...)
		addrs = append(addrs, make([]byte, 16)...)
		addrs = binary.BigEndian.AppendUint16(addrs, src.Port())
		addrs = binary.BigEndian.AppendUint16(addrs, 443)
	case 3:
		addrs = make([]byte, 216)
	}
	addrs = append(addrs, tlv...)
	h := append([]byte{}, sigV2...)
	h = append(h, 0x20|cmd, family)
	h = binary.BigEndian.AppendUint16(h, uint16(len(addrs)))
	return append(h, addrs...)
}

func TestReadProxyHeader(t *testing.T) {
	const req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tt := range []struct {
		name   string
		in     string
		client string // "" for none
		bad    bool
	}{
		{"v1 TCP4", "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n" + req, "192.0.2.1:56324", false},
		{"v1 TCP6", "PROXY TCP6 2001:db8::1 2001:db8::2 56324 443\r\n" + req, "[2001:db8::1]:56324", false},
		{"v1 UNKNOWN", "PROXY UNKNOWN\r\n" + req, "", false},
		{"v1 UNKNOWN with addresses", "PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n" + req, "", false},
		{"no header", req, "", false},
		{"a method like the signature", "PROPFIND / HTTP/1.1\r\nHost: x\r\n\r\n", "", false},
		{"leading CRLF", "\r\n" + req, "", false},
		{"v1 family and address disagree", "PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n" + req, "", true},
		{"v1 missing a field", "PROXY TCP4 192.0.2.1 198.51.100.1 56324\r\n" + req, "", true},
		{"v1 port out of range", "PROXY TCP4 192.0.2.1 198.51.100.1 65536 443\r\n" + req, "", true},
		{"v1 leading zero", "PROXY TCP4 192.0.2.1 198.51.100.1 080 443\r\n" + req, "", true},
		{"v1 two blanks", "PROXY TCP4  192.0.2.1 198.51.100.1 1 2\r\n" + req, "", true},
		{"v1 bare LF", "PROXY TCP4 192.0.2.1 198.51.100.1 1 2\n" + req, "", true},
		{"v1 too long", "PROXY UNKNOWN " + strings.Repeat("x", 120) + "\r\n" + req, "", true},
		{"v1 cut", "PROXY TCP4 192.0.2.1", "", true},
		{"v2 TCP4", string(v2Header(1, 0x11, netip.MustParseAddrPort("192.0.2.7:1234"), nil)) + req, "192.0.2.7:1234", false},
		{"v2 TCP6 with TLVs", string(v2Header(1, 0x21, netip.MustParseAddrPort("[2001:db8::9]:99"), bytes.Repeat([]byte{4}, 3000))) + req, "[2001:db8::9]:99", false},
		{"v2 IPv4 in IPv6", string(v2Header(1, 0x21, netip.MustParseAddrPort("[::ffff:192.0.2.7]:5"), nil)) + req, "192.0.2.7:5", false},
		{"v2 LOCAL", string(v2Header(0, 0x11, netip.MustParseAddrPort("192.0.2.7:1234"), nil)) + req, "", false},
		{"v2 unix", string(v2Header(1, 0x31, netip.AddrPort{}, nil)) + req, "", false},
		{"v2 unspecified", string(v2Header(1, 0x00, netip.AddrPort{}, nil)) + req, "", false},
		{"v2 bad command", string(append(append([]byte{}, sigV2...), 0x22, 0x11, 0, 0)) + req, "", true},
		{"v2 bad version", string(append(append([]byte{}, sigV2...), 0x11, 0x11, 0, 0)) + req, "", true},
		{"v2 bad family", string(append(append([]byte{}, sigV2...), 0x21, 0x41, 0, 0)) + req, "", true},
		{"v2 addresses short", string(append(append([]byte{}, sigV2...), 0x21, 0x11, 0, 4, 1, 2, 3, 4)) + req, "", true},
		{"v2 cut", string(v2Header(1, 0x11, netip.MustParseAddrPort("192.0.2.7:1234"), nil)[:20]), "", true},
		{"v2 signature cut", string(sigV2[:7]), "", true},
	} {
		rd := strings.NewReader(tt.in)
		client, rest, err := readProxyHeader(rd)
		more, _ := io.ReadAll(rd) // what the header's reader left unread
		rest = append(rest, more...)
		switch {
		case tt.bad:
			if !errors.Is(err, errHeader) {
				t.Errorf("%s: %v, %v; want errHeader", tt.name, client, err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := ""
		if client != nil {
			got = client.String()
		}
		if got != tt.client {
			t.Errorf("%s: client %q; want %q", tt.name, got, tt.client)
		}
		wantRest := req
		if !strings.HasPrefix(tt.in, string(sigV1)) && !strings.HasPrefix(tt.in, string(sigV2)) {
			wantRest = tt.in
		}
		if string(rest) != wantRest {
			t.Errorf("%s: rest %q; want %q", tt.name, rest, wantRest)
		}
	}
	// An empty connection is no header, and no error.
	if client, rest, err := readProxyHeader(strings.NewReader("")); client != nil || len(rest) != 0 || err != nil {
		t.Errorf("empty: %v, %q, %v", client, rest, err)
	}
}

// TestProxyProtocolListener: from a trusted address, a PROXY header names
// the connection's client and what follows it is read as the
// connection's bytes; a bad header closes the connection; from any other
// address, the header is the connection's first bytes.
func TestProxyProtocolListener(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	elsewhere := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	var bad sync.Map
	for _, tt := range []struct {
		name    string
		trusted []netip.Prefix
		send    string
		remote  string // "" for the connection's own
		read    string
	}{
		{"v1", loopback, "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\nhello", "192.0.2.1:56324", "hello"},
		{"v2", loopback, string(v2Header(1, 0x21, netip.MustParseAddrPort("[2001:db8::1]:7"), []byte{1, 0, 1, 'x'})) + "hello", "[2001:db8::1]:7", "hello"},
		{"v2 LOCAL", loopback, string(v2Header(0, 0x11, netip.MustParseAddrPort("192.0.2.1:1"), nil)) + "hello", "", "hello"},
		{"none", loopback, "hello", "", "hello"},
		{"untrusted", elsewhere, "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\nhello", "", "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\nhello"},
		{"malformed", loopback, "PROXY TCP4 nonsense\r\nhello", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, addr := listen(t, Config{Trusted: tt.trusted, ProxyHeader: true, BadHeader: func(a net.Addr, err error) { bad.Store(tt.name, err) }})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tt.send)
			c.(*net.TCPConn).CloseWrite()
			sc, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			want := tt.remote
			if want == "" {
				want = c.LocalAddr().String()
			}
			if got := sc.RemoteAddr().String(); got != want {
				t.Errorf("RemoteAddr %s; want %s", got, want)
			}
			sc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(sc)
			if string(got) != tt.read {
				t.Errorf("read %q, %v; want %q", got, err, tt.read)
			}
			_, wasBad := bad.Load(tt.name)
			if wasBad != (tt.name == "malformed") {
				t.Errorf("BadHeader called: %v", wasBad)
			}
		})
	}
}

// TestProxyPerIP: a trusted proxy's connections are not capped per
// address; those whose PROXY header names a client count for that client.
func TestProxyPerIP(t *testing.T) {
	var refused sync.Map
	l, addr := listen(t, Config{
		PerIP: 1, Answer503: true, ProxyHeader: true,
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Refused: func(a net.Addr) { refused.Store(a.String(), true) },
	})
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(header string) (net.Conn, net.Conn) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, header)
		sc := <-accepted
		t.Cleanup(func() { sc.Close() })
		sc.RemoteAddr() // reads the header, as net/http does first
		return c, sc
	}
	// Three plain connections from the proxy: none refused.
	for range 3 {
		dial("GET / HTTP/1.1\r\n")
	}
	dial("PROXY TCP4 192.0.2.1 198.51.100.1 1000 443\r\n")
	dial("PROXY TCP4 192.0.2.2 198.51.100.1 1000 443\r\n")
	if l.Open() != 5 {
		t.Errorf("open %d; want 5", l.Open())
	}
	// A second connection of 192.0.2.1 is over its cap: answered 503.
	c, sc := dial("PROXY TCP4 192.0.2.1 198.51.100.1 1001 443\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second connection of one client through the proxy: %v, %v; want 503", resp, err)
	}
	if _, err := sc.Read(make([]byte, 1)); !errors.Is(err, errRefused) {
		t.Errorf("the refused connection reads %v", err)
	}
	if _, ok := refused.Load("192.0.2.1:1001"); !ok {
		t.Error("Refused not told of the client")
	}
	sc.Close()
	if l.Open() != 5 {
		t.Errorf("open %d after the refused one closed; want 5", l.Open())
	}
}

// FuzzProxyHeader: any bytes give a client, no header, or errHeader,
// never a panic; without an error, the rest is what followed.
func FuzzProxyHeader(f *testing.F) {
	f.Add([]byte("PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\nGET"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(v2Header(1, 0x11, netip.MustParseAddrPort("192.0.2.7:1234"), []byte{1, 2}))
	f.Add(v2Header(1, 0x21, netip.MustParseAddrPort("[2001:db8::9]:99"), nil))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := bytes.NewReader(in)
		client, rest, err := readProxyHeader(rd)
		more, _ := io.ReadAll(rd)
		rest = append(rest, more...)
		if err != nil {
			if !errors.Is(err, errHeader) {
				t.Fatalf("%q: %v", in, err)
			}
			return
		}
		if !bytes.HasSuffix(in, rest) {
			t.Fatalf("%q: rest %q is not what followed", in, rest)
		}
		if client == nil && len(in) > 0 && !bytes.HasPrefix(in, sigV1) && !bytes.HasPrefix(in, sigV2) && !bytes.Equal(rest, in) {
			t.Fatalf("%q: no header, but rest %q", in, rest)
		}
	})
}
