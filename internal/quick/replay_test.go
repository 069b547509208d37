package quick

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseQuestion(t *testing.T) {
	for _, tt := range []struct {
		head string
		ok   bool
	}{
		{"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"HEAD /d/a-b_c~d.txt HTTP/1.1\r\nhost: example.com:8080\r\n\r\n", true},
		{"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8\r\nAccept: */*\r\nConnection: Keep-Alive\r\n\r\n", true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"GET /a HTTP/1.1\r\n\r\n", false},                                        // no Host
		{"GET /a HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", false},                  // twice
		{"GET /a HTTP/1.1\r\nHost: \r\n\r\n", false},                              // empty
		{"GET /a HTTP/1.1\r\nHost: x y\r\n\r\n", false},                           // not a host
		{"GET /a HTTP/1.0\r\nHost: x\r\n\r\n", false},                             // HTTP/1.0
		{"POST /a HTTP/1.1\r\nHost: x\r\n\r\n", false},                            // a method
		{"get /a HTTP/1.1\r\nHost: x\r\n\r\n", false},                             // its case
		{"GET /a?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", false},                         // a query
		{"GET /a%2fb HTTP/1.1\r\nHost: x\r\n\r\n", false},                         // an escape
		{"GET /a/../b HTTP/1.1\r\nHost: x\r\n\r\n", false},                        // a dot segment
		{"GET /.hidden HTTP/1.1\r\nHost: x\r\n\r\n", false},                       // a dot name
		{"GET //a HTTP/1.1\r\nHost: x\r\n\r\n", false},                            // an empty segment
		{"GET /_largo/metrics HTTP/1.1\r\nHost: x\r\n\r\n", false},                // the server's own
		{"GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n", false},                     // absolute
		{"GET /a\\b HTTP/1.1\r\nHost: x\r\n\r\n", false},                          // a backslash
		{"GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n", false},  // a credential
		{"GET /a HTTP/1.1\r\nHost: x\r\nCookie: s=1\r\n\r\n", false},              // a cookie
		{"GET /a HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n", false},         // a range
		{"GET /a HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n", false},    // an encoding
		{"GET /a HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"e\"\r\n\r\n", false},     // a condition
		{"GET /a HTTP/1.1\r\nHost: x\r\nOrigin: http://o\r\n\r\n", false},         // an origin
		{"GET /a HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n", false}, // a proxy's
		{"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false},        // close
		{"GET /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\n\r\n", false},
		{"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: a\x01b\r\n\r\n", false}, // a control byte
		{"GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: a\r\nUser-Agent: b\r\n\r\n", false},
		{"GET /a HTTP/1.1\r\nHost: x\r\nHost x\r\n\r\n", false},          // no colon
		{"GET /a HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", false},         // folding
		{"GET /a HTTP/1.1\nHost: x\r\n\r\n", false},                      // a bare LF
		{"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n", false}, // more than a head
	} {
		_, ok := parseQuestion([]byte(tt.head))
		if ok != tt.ok {
			t.Errorf("%q: %v; want %v", tt.head, ok, tt.ok)
		}
	}
}

func TestParseQuestionKey(t *testing.T) {
	q, ok := parseQuestion([]byte("HEAD /d/f.txt HTTP/1.1\r\nUser-Agent: u\r\nHOST: h:1\r\n\r\n"))
	if !ok || !q.head {
		t.Fatalf("%+v %v", q, ok)
	}
	if k := string(appendKey(nil, q)); k != "HEAD /d/f.txt" || string(q.host) != "h:1" {
		t.Fatalf("key %q", k)
	}
}

// kept is a Kept whose answer may be sent again while still is set.
type kept struct {
	body   string
	still  atomic.Bool
	mu     sync.Mutex
	served []string // method and target of each answer sent again
}

func (k *kept) Body() []byte              { return []byte(k.body) }
func (k *kept) Still(host, _ string) bool { return host == "x" && k.still.Load() }
func (k *kept) Served(method, target, _ string, sent int64, _ time.Duration, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.served = append(k.served, method+" "+target)
}

func (k *kept) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.served)
}

// TestReplay: the handler's offered answer is sent again, to the same
// question only and while the handler says so; anything else runs it.
func TestReplay(t *testing.T) {
	k := &kept{body: "the kept body"}
	k.still.Store(true)
	status := atomic.Int32{}
	status.Store(200)
	var ran atomic.Int32
	var cookie atomic.Bool
	l := newLane(t, func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		Offer(connOf(r), k)
		if cookie.Load() {
			w.Header().Set("Set-Cookie", "s=1")
		}
		w.Header().Set("Content-Length", "13")
		w.WriteHeader(int(status.Load()))
		if r.Method != "HEAD" {
			io.WriteString(w, k.body)
		}
	}, withConnContext)
	c, br := l.conn(t)
	ask := func(req string, method string, wantRan int32, wantServed int) {
		t.Helper()
		io.WriteString(c, req)
		resp, body := read(t, br, method)
		if resp.StatusCode != int(status.Load()) || (method == "GET" && body != k.body) || resp.Header.Get("Date") == "" || resp.ContentLength != 13 {
			t.Fatalf("%q: %d %q %v", req, resp.StatusCode, body, resp.Header)
		}
		// An answer sent again is recorded once it is sent, after the
		// client may have read it.
		for end := time.Now().Add(5 * time.Second); k.count() < wantServed && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		if ran.Load() != wantRan || k.count() != wantServed {
			t.Fatalf("%q: the handler ran %d times, %d answers sent again; want %d and %d", req, ran.Load(), k.count(), wantRan, wantServed)
		}
	}
	ask(get("/k/a"), "GET", 1, 0) // offered, kept
	ask(get("/k/a"), "GET", 1, 1) // sent again
	ask("GET /k/a HTTP/1.1\r\nhost: x\r\nUser-Agent: u\r\n\r\n", "GET", 1, 2)
	ask("GET /k/a HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n\r\n", "GET", 2, 2) // another question
	ask("HEAD /k/a HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", 3, 2)             // another method
	ask("HEAD /k/a HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", 3, 3)
	ask("GET /k/a HTTP/1.1\r\nHost: y\r\n\r\n", "GET", 4, 3) // another host
	k.still.Store(false)
	ask(get("/k/a"), "GET", 5, 3) // no longer: the handler, which offers again
	k.still.Store(true)
	ask(get("/k/a"), "GET", 5, 4)
	k.mu.Lock()
	if got := strings.Join(k.served, ","); got != "GET /k/a,GET /k/a,HEAD /k/a,GET /k/a" {
		t.Errorf("served: %s", got)
	}
	k.mu.Unlock()

	// An answer with a cookie is not kept, nor one other than a 200.
	cookie.Store(true)
	ask(get("/k/c"), "GET", 6, 4)
	ask(get("/k/c"), "GET", 7, 4)
	cookie.Store(false)
	status.Store(404)
	ask(get("/k/b"), "GET", 8, 4)
	ask(get("/k/b"), "GET", 9, 4)
}

type connKey struct{}

// withConnContext keeps each request's connection in its context, as
// largo's server does for its handler.
func withConnContext(s *http.Server) {
	s.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
}

func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}

func TestHeadEnd(t *testing.T) {
	for _, tt := range []struct {
		b      string
		end    int
		strict bool
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", 27, true},
		{"GET / HTTP/1.1\r\nHost: x\r\n", -1, false},
		{"GET / HTTP/1.1\nHost: x\n\n", 24, false},
		{"GET / HTTP/1.1\r\nHost: x\r\n\n", 26, false},
		{"GET / HTTP/1.1\r\nHost: x\n\r\n", 26, false},
		{"GET / HTTP/1.1\nHost: x\r\n\r\n", 26, false},
	} {
		end, strict := headEnd([]byte(tt.b))
		if end != tt.end || strict != tt.strict {
			t.Errorf("%q: %d %v; want %d %v", tt.b, end, strict, tt.end, tt.strict)
		}
	}
}

// A head whose lines end in bare LFs is answered at once, by net/http,
// not waited on for a CRLF CRLF that will not come.
func TestBareLFHead(t *testing.T) {
	l := newLane(t, nil)
	c, br := l.conn(t)
	start := time.Now()
	io.WriteString(c, "GET /k/a HTTP/1.1\nHost: x\n\n")
	resp, body := read(t, br, "GET")
	if resp.StatusCode != 200 || body != "body of /k/a" || time.Since(start) > 2*time.Second {
		t.Fatalf("%d %q after %s", resp.StatusCode, body, time.Since(start))
	}
}
