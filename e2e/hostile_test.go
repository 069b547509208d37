//go:build e2e

package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostile is a kind of client that holds a connection without making
// progress.
type hostile struct {
	name string
	send string // what it sends, and then nothing more
	// answered: the server answers before closing (the request's head is
	// complete); otherwise it just closes.
	answered bool
}

var hostiles = []hostile{
	{"idle", "", false},
	{"slow head", "GET /small.txt HTTP/1.1\r\nHost: x\r\nUser-Agent: slo", false},
	{"GET with a body that never comes", "GET /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", true},
	{"refused PUT with a body that never comes", "PUT /new.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", true},
	{"refused PUT expecting 100-continue", "PUT /new.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n", true},
}

// TestHostileConnections fills --max-conns with clients that connect and
// then stall: idle, in the middle of their head, or after a head that
// announces a body they never send. Every one must be answered where it
// asked something and closed well within the idle timeout's reach (before
// the fixed 10 s the head used to get), and an ordinary client must get in
// once they are gone.
func TestHostileConnections(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "small.txt"), []byte("hello"), 0o644)
	const idle = 2 * time.Second
	const perKind = 8
	s := startServer(t, dir, "--idle-timeout", idle.String(), "--max-conns", fmt.Sprint(perKind*len(hostiles)))

	// The server closes each within the idle timeout and a little; the
	// client waits four times as long before calling it held.
	patience := 4 * idle
	type result struct {
		kind   string
		status int
		closed bool
		err    error
	}
	results := make(chan result, perKind*len(hostiles))
	var wg sync.WaitGroup
	start := time.Now()
	for _, h := range hostiles {
		for range perKind {
			c, err := net.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.WriteString(c, h.send)
				c.SetReadDeadline(start.Add(patience))
				r := result{kind: h.name}
				br := bufio.NewReader(c)
				if h.answered {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						r.err = fmt.Errorf("no answer: %w", err)
						results <- r
						return
					}
					io.Copy(io.Discard, resp.Body)
					r.status = resp.StatusCode
				}
				_, err := br.ReadByte()
				var ne net.Error
				r.closed = !errors.As(err, &ne) || !ne.Timeout()
				results <- r
			}()
		}
	}
	wg.Wait()
	close(results)
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", r.kind, r.err)
		case !r.closed:
			t.Errorf("%s: still open after %s", r.kind, patience)
		case r.status >= 500:
			t.Errorf("%s: answered %d", r.kind, r.status)
		}
	}
	if t.Failed() {
		return
	}
	if !waitFor(5*time.Second, func() bool { c, _ := rawStatus(t, s.Addr, "/small.txt"); return c == 200 }) {
		t.Fatal("an ordinary client is still locked out")
	}
	if log := s.stderr.String(); strings.Contains(log, "panic") {
		t.Fatalf("server log:\n%s", tail(log, 2048))
	}
}

// TestHTTP2Limits reads the SETTINGS the server opens an HTTP/2
// connection with: its limits are largo's own, not the library's
// defaults (250 streams, 1 MiB frames).
func TestHTTP2Limits(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t)
	s := startServer(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)
	c, err := tls.Dial("tcp", s.Addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q", p)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// The client preface and an empty SETTINGS frame.
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	var head [9]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		t.Fatal(err)
	}
	n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
	if head[3] != 4 || n%6 != 0 {
		t.Fatalf("first frame: type %d, %d bytes; want SETTINGS", head[3], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(c, payload); err != nil {
		t.Fatal(err)
	}
	got := map[uint16]uint32{}
	for i := 0; i < n; i += 6 {
		got[binary.BigEndian.Uint16(payload[i:])] = binary.BigEndian.Uint32(payload[i+2:])
	}
	const maxStreams, maxFrame, maxHeaderList = 3, 5, 6
	if got[maxStreams] != 100 || got[maxFrame] != 64<<10 || got[maxHeaderList] == 0 || got[maxHeaderList] > 128<<10 {
		t.Errorf("SETTINGS %v; want 100 streams, 64 KiB frames, a header list under 128 KiB", got)
	}
}

// TestRefusedBodyAnswerSurvives: a client that is still sending a body
// when the server refuses it, and reads the answer only once it is done
// sending, gets the answer (413 with its reason), not a reset that would
// throw the answer away: the server lingers, discarding the rest of the
// body, before it closes. A client sending for ever is cut all the same.
func TestRefusedBodyAnswerSurvives(t *testing.T) {
	s := startServer(t, t.TempDir(), "--upload-open", "--max-upload", "1MB", "--idle-timeout", "3s")
	for i := range 3 {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		// The whole body is sent before the answer is read: long after the
		// server answered (at 1 MB).
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err = io.WriteString(c, "PUT /big.bin HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("z", 64<<10))
		for n := 0; err == nil && n < 128; n++ { // 8 MiB
			_, err = io.WriteString(c, chunk)
		}
		if err == nil {
			_, err = io.WriteString(c, "0\r\n\r\n")
		}
		if err != nil {
			t.Errorf("round %d: sending the body: %v (the server reset the connection)", i, err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("round %d: reading the answer: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "large") {
			t.Errorf("round %d: %d %q, want 413 with its reason", i, resp.StatusCode, body)
		}
		c.Close()
	}

	// A client that never stops sending is cut within the linger time.
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "PUT /endless.bin HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("z", 64<<10))
	for time.Since(start) < 20*time.Second {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, chunk); err != nil {
			break
		}
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("an endless body held its connection %v after its answer", d)
	}
}
