package s3test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Proxy is a reverse proxy in front of a Server that counts the requests
// it forwards, by method and by what they reach, and the bytes of their
// answers: what a store costs the bucket, measured from outside it. With Quirks, it also behaves as
// another S3 server would where that server departs from versitygw
// (quirks.go). Requests keep the Host they were signed for, and those it
// changes are signed again with the server's credentials.
type Proxy struct {
	// URL is the proxy's endpoint, to give a client instead of the
	// server's.
	URL    string
	srv    *Server
	quirks Quirks
	rp     *httputil.ReverseProxy

	mu     sync.Mutex
	counts map[string]int
	lines  []string // the requests since Reset, while Trace is on
	trace  bool
	bytes  map[string]int64 // the answers' body bytes, by "METHOD what"
	// What the quirks remember between requests (quirks.go).
	creates map[string]chan struct{} // the creates of a key held together
	pages   map[string]string        // a listing's next token: the last common prefix before it
}

// Proxy starts a counting proxy in front of s, stopped when the test
// ends.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	return s.QuirkProxy(t, Quirks{})
}

// QuirkProxy starts a counting proxy in front of s that behaves as a
// server with q, stopped when the test ends.
func (s *Server) QuirkProxy(t testing.TB, q Quirks) *Proxy {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{srv: s, quirks: q, counts: map[string]int{}, bytes: map[string]int64{}, creates: map[string]chan struct{}{}, pages: map[string]string{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // as signed
			if edited(r.In) {
				p.sign(r.Out)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if err := p.answer(resp); err != nil {
				return err
			}
			p.countBody(resp)
			return nil
		},
	}
	hs := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(hs.Close)
	p.URL = hs.URL
	return p
}

// serve counts r, answers it as the quirks say, or forwards it.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.count(r)
	if p.quirks != (Quirks{}) && p.intercept(w, r) {
		return
	}
	p.rp.ServeHTTP(w, r)
}

// count counts r under its kind (see kind).
func (p *Proxy) count(r *http.Request) {
	k := kind(r)
	p.mu.Lock()
	p.counts[k]++
	if p.trace {
		p.lines = append(p.lines, r.Method+" "+r.URL.RequestURI())
	}
	p.mu.Unlock()
}

// kind is "METHOD what", what being "state" for a key of the state area
// (.largo/), "bucket" for a request on the bucket itself (a listing), and
// "object" for any other key.
func kind(r *http.Request) string {
	what := "object"
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case key == "":
		what = "bucket"
		if pre := r.URL.Query().Get("prefix"); strings.Contains(pre, ".largo/") {
			what = "state listing"
		}
	case strings.Contains(key, ".largo/"):
		what = "state"
	}
	return r.Method + " " + what
}

// countBody counts the bytes of an answer's body as the client reads
// them, under its request's kind.
func (p *Proxy) countBody(resp *http.Response) {
	resp.Body = &countedBody{ReadCloser: resp.Body, p: p, kind: kind(resp.Request)}
}

type countedBody struct {
	io.ReadCloser
	p    *Proxy
	kind string
}

func (b *countedBody) Read(q []byte) (int, error) {
	n, err := b.ReadCloser.Read(q)
	b.p.mu.Lock()
	b.p.bytes[b.kind] += int64(n)
	b.p.mu.Unlock()
	return n, err
}

// Bytes returns the body bytes of the answers forwarded since the last
// Reset, by "METHOD what" (as Counts), and their total: what the
// clients read off the bucket.
func (p *Proxy) Bytes() (map[string]int64, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.bytes))
	var n int64
	for k, v := range p.bytes {
		out[k] = v
		n += v
	}
	return out, n
}

// Trace keeps the requests forwarded from now on, for Lines.
func (p *Proxy) Trace(on bool) {
	p.mu.Lock()
	p.trace = on
	p.mu.Unlock()
}

// Lines returns the requests kept since the last Reset.
func (p *Proxy) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Env is the server's environment for a client of the proxy.
func (p *Proxy) Env() []string {
	env := p.srv.Env()
	for i, e := range env {
		if strings.HasPrefix(e, "AWS_ENDPOINT_URL=") {
			env[i] = "AWS_ENDPOINT_URL=" + p.URL
		}
	}
	return env
}

// Reset forgets the counts.
func (p *Proxy) Reset() {
	p.mu.Lock()
	clear(p.counts)
	clear(p.bytes)
	p.lines = nil
	p.mu.Unlock()
}

// Counts returns the requests counted since the last Reset, by "METHOD
// what", and their total.
func (p *Proxy) Counts() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	n := 0
	for k, v := range p.counts {
		out[k] = v
		n += v
	}
	return out, n
}

// Summary lists counts, largest first.
func Summary(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + ": " + strconv.Itoa(counts[k]))
	}
	return b.String()
}
