//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
)

// countingProxy forwards to target and counts the bytes of the request
// bodies it passes on: what a client sends on the wire.
func countingProxy(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countedBody{r: r.Body, n: &sent}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &sent
}

type countedBody struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countedBody) Close() error { return c.r.Close() }

// TestPutTreeResumes: `largo put -r` of a folder of 1,000 files, killed
// mid-way and run again, sends only the files the server does not hold
// whole (the bytes on the wire counted by a proxy in front), says how
// many were in place, and every file lands whole.
func TestPutTreeResumes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "many")
	const files = 1000
	sizes := map[string]int64{}
	sums := map[string]string{}
	var total int64
	for i := range files {
		name := fmt.Sprintf("d%d/f%04d.bin", i%10, i)
		size := int64(2000 + i*37%3000)
		sums[name] = writeRandom(t, filepath.Join(src, name), size, uint64(1000+i))
		sizes[name] = size
		total += size
	}
	served := t.TempDir()
	s := startServer(t, served, "--upload", "--token", testToken)
	proxy, sent := countingProxy(t, s.URL)
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=" + testToken}
	dest := proxy.URL + "/up/"

	landed := func() (n int, bytes int64) {
		for name, size := range sizes {
			if fi, err := os.Stat(filepath.Join(served, "up", name)); err == nil && fi.Size() == size {
				n++
				bytes += size
			}
		}
		return n, bytes
	}
	c := startClientEnv(t, env, "put", "-r", src, dest, "-q")
	if !poll.Until(60*time.Second, 5*time.Millisecond, func() bool { n, _ := landed(); return n >= files/3 }) {
		t.Fatalf("fewer than %d files landed in 60s:\n%s", files/3, c.stderr.String())
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.wait(t, 30*time.Second)
	before, inPlace := landed()
	if before == files {
		t.Fatal("every file landed before the kill")
	}
	sent.Store(0)
	c = startClientEnv(t, env, "put", "-r", src, dest)
	if code := c.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
	}
	if n, _ := landed(); n != files {
		t.Fatalf("%d of %d files landed", n, files)
	}
	for name, want := range sums {
		if got := fileSHA(t, filepath.Join(served, "up", name)); got != want {
			t.Fatalf("%s: stored %s, want %s", name, got, want)
		}
	}
	m := regexp.MustCompile(`uploaded (\d+) files \((\d+) already in place`).FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("no summary: %s", c.stderr.String())
	}
	if skipped, _ := strconv.Atoi(m[2]); skipped != before {
		t.Errorf("%s already in place; %d files had landed", m[2], before)
	}
	if missing := total - inPlace; sent.Load() > missing || sent.Load() == 0 {
		t.Fatalf("the re-run sent %d bytes; %d were missing (of %d)", sent.Load(), missing, total)
	}
	t.Logf("killed with %d of %d files in place; the re-run sent %d bytes of the %d missing", before, files, sent.Load(), total-inPlace)
}
