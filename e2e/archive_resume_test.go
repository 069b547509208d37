//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// resumeTree is a folder of odd sizes and names: empty files, a file of
// exactly one tar block, a name past USTAR's 100 bytes, a unicode name,
// and a few megabytes in a subfolder, so that a random cut lands in a
// header as often as in data. It returns the files by their path inside
// the archive, which is named "set".
func resumeTree(seed uint64) map[string]string {
	rng := rand.New(rand.NewPCG(seed, 2))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	return map[string]string{
		"set/empty":                       "",
		"set/one":                         "1",
		"set/b512":                        random(512),
		"set/" + strings.Repeat("n", 140): random(1000),
		"set/ünï/名前.txt":                  "unicode",
		"set/sub/big.bin":                 random(3<<20 + 5),
		"set/sub/deeper/mid.bin":          random(700<<10 + 3),
		"set/z-last":                      random(4097),
	}
}

// seedTree stores files on the target g.
func seedTree(t *testing.T, g *target, files map[string]string) {
	t.Helper()
	for name, content := range files {
		g.seed(t, name, content)
	}
}

// untarred unpacks the tar at path with the system's tar and fails the
// test unless it holds exactly the files of want (and the folders on
// their way). On a folder it also compares the result with the served
// folder itself, by diff -r.
func untarred(t *testing.T, g *target, path string, want map[string]string) {
	t.Helper()
	tarBin := need(t, "tar")
	out := t.TempDir()
	if b, err := exec.Command(tarBin, "-xf", path, "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, b)
	}
	got := map[string]string{}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	for name, content := range want {
		if g, ok := got[name]; !ok || g != content {
			t.Errorf("%s: %d bytes, present %v; want %d bytes", name, len(g), ok, len(content))
		}
	}
	if len(got) != len(want) {
		t.Errorf("the tar holds %d files; want %d", len(got), len(want))
	}
	if g.srv == nil {
		diff := need(t, "diff")
		if b, err := exec.Command(diff, "-r", filepath.Join(g.dir, "set"), filepath.Join(out, "set")).CombinedOutput(); err != nil {
			t.Errorf("diff -r of the folder and the untarred archive: %v\n%s", err, b)
		}
	}
}

// cutProxy forwards connections to a server, and cuts the first answer
// it carries after a given number of body bytes. With hold set, it then
// sends on cutAt and waits for hold to close before it closes the
// connection, so that the test can change the folder before the client
// learns of the cut. It keeps the request heads it saw and the status
// lines of the answers.
type cutProxy struct {
	ln     net.Listener
	target string
	cut    int64
	hold   chan struct{}
	cutAt  chan struct{}

	mu      sync.Mutex
	cutDone bool
	heads   []string // requests' heads, in order
	status  []string // answers' status lines, in order
}

// newCutProxy starts a cutProxy in front of target; with hold, it holds
// the cut connection until hold closes.
func newCutProxy(t *testing.T, target string, cut int64, hold bool) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cut: cut, cutAt: make(chan struct{}, 1)}
	if hold {
		p.hold = make(chan struct{})
	}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

// URL is the proxy's base URL, with a trailing slash.
func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() + "/" }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		cutThis := !p.cutDone
		p.cutDone = true
		p.mu.Unlock()
		go p.requests(c, s)
		go p.answers(s, c, cutThis)
	}
}

// requests copies the client's requests to the server, noting each head.
func (p *cutProxy) requests(c, s net.Conn) {
	defer s.Close()
	r := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		var head bytes.Buffer
		fmt.Fprintf(&head, "%s %s\n", req.Method, req.URL)
		req.Header.Write(&head)
		p.mu.Lock()
		p.heads = append(p.heads, head.String())
		p.mu.Unlock()
		if err := req.Write(s); err != nil {
			return
		}
	}
}

// answers copies the server's answers to the client; with cut set, only
// the first p.cut bytes of the first body, then both connections close.
func (p *cutProxy) answers(s, c net.Conn, cut bool) {
	defer c.Close()
	defer s.Close()
	r := bufio.NewReader(s)
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	p.mu.Lock()
	p.status = append(p.status, strings.TrimSpace(line))
	p.mu.Unlock()
	c.Write([]byte(line))
	if !cut {
		io.Copy(c, r) // the rest of this connection's answers, as they are
		return
	}
	for { // the head, to its empty line
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		c.Write([]byte(line))
		if line == "\r\n" {
			break
		}
	}
	io.CopyN(c, r, p.cut)
	if p.hold != nil {
		p.cutAt <- struct{}{}
		<-p.hold
	}
}

// TestArchiveResumeCurl cuts the download of a folder's tar at a random
// offset (a proxy closes the connection there), resumes it with curl -C -,
// and untars the result: the files of the folder, byte for byte. Then the
// same with the first part fetched by curl --range. On a folder and on a
// bucket.
func TestArchiveResumeCurl(t *testing.T) {
	curl := need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		files := resumeTree(seed)
		seedTree(t, g, files)
		s := g.serve(t)
		u := s.URL + "set/?archive=tar"
		resp, err := http.Head(u)
		if err != nil {
			t.Fatal(err)
		}
		size := resp.ContentLength
		if resp.StatusCode != 200 || size <= 0 || resp.Header.Get("Accept-Ranges") != "bytes" || resp.Header.Get("ETag") == "" {
			t.Fatalf("HEAD: %d, %v", resp.StatusCode, resp.Header)
		}

		t.Run("cut by a proxy", func(t *testing.T) {
			cut := 1 + rng.Int64N(size-1)
			t.Logf("cut after %d of %d bytes", cut, size)
			p := newCutProxy(t, s.Addr, cut, false)
			out := filepath.Join(t.TempDir(), "set.tar")
			first := exec.Command(curl, "-sS", "-o", out, p.URL()+"set/?archive=tar")
			if b, err := first.CombinedOutput(); err == nil {
				t.Fatalf("curl through the cutting proxy succeeded:\n%s", b)
			}
			if fi, err := os.Stat(out); err != nil || fi.Size() != cut {
				t.Fatalf("after the cut: %v, %v; want %d bytes", fi, err, cut)
			}
			resumed := exec.Command(curl, "-sS", "-f", "-C", "-", "-o", out, "-w", "%{http_code} %{size_download}", u)
			b, err := resumed.CombinedOutput()
			if err != nil || string(b) != fmt.Sprintf("206 %d", size-cut) {
				t.Fatalf("curl -C -: %v: %s; want 206 and %d bytes", err, b, size-cut)
			}
			untarred(t, g, out, files)
		})

		t.Run("first part by --range", func(t *testing.T) {
			cut := 1 + rng.Int64N(size-1)
			t.Logf("first %d of %d bytes", cut, size)
			out := filepath.Join(t.TempDir(), "set.tar")
			if b, err := exec.Command(curl, "-sS", "-f", "--range", fmt.Sprintf("0-%d", cut-1), "-o", out, u).CombinedOutput(); err != nil {
				t.Fatalf("curl --range: %v\n%s", err, b)
			}
			if b, err := exec.Command(curl, "-sS", "-f", "-C", "-", "-o", out, u).CombinedOutput(); err != nil {
				t.Fatalf("curl -C -: %v\n%s", err, b)
			}
			untarred(t, g, out, files)
		})
	})
}

// TestArchiveResumeGet cuts `largo get` of a folder's tar at a random
// offset: it resumes by itself with Range and If-Range, and the result
// untars to the folder (one stream, -j 1: the resume of a stream is what
// is tested). When the folder changes at the cut, the resume's
// If-Range no longer holds: the server answers the new archive whole, and
// the download starts again from zero rather than mixing versions. On a
// folder and on a bucket.
func TestArchiveResumeGet(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		files := resumeTree(seed)
		seedTree(t, g, files)
		s := g.serve(t)
		resp, err := http.Head(s.URL + "set/?archive=tar")
		if err != nil {
			t.Fatal(err)
		}
		size, etag := resp.ContentLength, resp.Header.Get("ETag")

		t.Run("unchanged", func(t *testing.T) {
			cut := 1 + rng.Int64N(size-1)
			t.Logf("cut after %d of %d bytes", cut, size)
			p := newCutProxy(t, s.Addr, cut, false)
			out := filepath.Join(t.TempDir(), "set.tar")
			code, stderr := runClient(t, t.TempDir(), "get", "-j", "1", p.URL()+"set/?archive=tar", "-o", out)
			if code != 0 {
				t.Fatalf("largo get: exit %d\n%s", code, stderr)
			}
			p.mu.Lock()
			heads, status := p.heads, p.status
			p.mu.Unlock()
			if len(heads) != 2 || !strings.Contains(heads[1], fmt.Sprintf("Range: bytes=%d-", cut)) || !strings.Contains(heads[1], "If-Range: "+etag) || !strings.Contains(status[1], "206") {
				t.Fatalf("the resume after the cut: %q, answered %q", heads, status)
			}
			untarred(t, g, out, files)
		})

		t.Run("changed at the cut", func(t *testing.T) {
			cut := 1 + rng.Int64N(size-1)
			t.Logf("cut after %d of %d bytes", cut, size)
			p := newCutProxy(t, s.Addr, cut, true)
			out := filepath.Join(t.TempDir(), "set.tar")
			c := startClient(t, t.TempDir(), "get", "-j", "1", p.URL()+"set/?archive=tar", "-o", out)
			select {
			case <-p.cutAt:
			case <-time.After(60 * time.Second):
				t.Fatalf("no cut in 60 s\n%s", c.stderr.String())
			}
			changed := resumeTree(seed + 1)
			seedTree(t, g, changed)
			close(p.hold)
			if code := c.wait(t, 120*time.Second); code != 0 {
				t.Fatalf("largo get: exit %d\n%s", code, c.stderr.String())
			}
			p.mu.Lock()
			heads, status := p.heads, p.status
			p.mu.Unlock()
			if len(heads) != 2 || !strings.Contains(heads[1], "If-Range: "+etag) || !strings.Contains(status[1], "200") {
				t.Fatalf("the resume after the change: %q, answered %q", heads, status)
			}
			untarred(t, g, out, changed)

			// A range under the old ETag: the whole new archive with
			// If-Range, a 412 with If-Match.
			resp := get(t, s.URL+"set/?archive=tar", "Range", "bytes=10-", "If-Range", etag)
			if resp.StatusCode != 200 || resp.Header.Get("ETag") == etag {
				t.Errorf("If-Range of the old version: %d, ETag %s", resp.StatusCode, resp.Header.Get("ETag"))
			}
			if resp := get(t, s.URL+"set/?archive=tar", "Range", "bytes=10-", "If-Match", etag); resp.StatusCode != 412 {
				t.Errorf("If-Match of the old version: %d; want 412", resp.StatusCode)
			}
		})
	})
}

// TestArchiveRangesRefused: without the files' CRC-32s a zip answers a
// range whole, and a tar.zst (compressed) always does, each saying
// Accept-Ranges: none; curl -C - then refuses to append to its file.
func TestArchiveRangesRefused(t *testing.T) {
	curl := need(t, "curl")
	dir := t.TempDir()
	files := resumeTree(1)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	s := startServer(t, dir)
	for _, format := range []string{"zip", "tar.zst"} {
		resp := get(t, s.URL+"set/?archive="+format, "Range", "bytes=100-")
		if resp.StatusCode != 200 || resp.Header.Get("Accept-Ranges") != "none" {
			t.Errorf("%s with a range: %d, Accept-Ranges %q", format, resp.StatusCode, resp.Header.Get("Accept-Ranges"))
		}
		out := filepath.Join(t.TempDir(), "part")
		os.WriteFile(out, []byte("first bytes"), 0o644)
		if b, err := exec.Command(curl, "-sS", "-C", "-", "-o", out, s.URL+"set/?archive="+format).CombinedOutput(); err == nil {
			t.Errorf("curl -C - of a %s: no error\n%s", format, b)
		}
	}
}
