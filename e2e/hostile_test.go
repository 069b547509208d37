package e2e

import (
	"bufio"
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
