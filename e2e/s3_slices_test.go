//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"largo/s3/s3test"
)

// startCached starts largo on srv's bucket, through proxy, reading through
// a slice cache in the folder cache.
func startCached(t *testing.T, srv *s3test.Server, proxy *s3test.Proxy, cache string, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "--store", "s3://" + srv.Bucket + "/", "--listen", "127.0.0.1:0", "--s3-cache", cache, "--s3-cache-size", "64MiB"}, args...)
	return startLargo(t, args, proxy.Env())
}

// TestS3SliceCache serves a bucket through a slice cache: ten downloads
// of one object at once read each of its slices off the bucket once and
// arrive whole; ranges and resumes are answered as from a folder; a
// restart serves from the slices kept; a replaced object is served new.
func TestS3SliceCache(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	proxy := srv.Proxy(t)
	const size = 20<<20 + 7 // three slices of 8 MiB, the last short
	_, sha := putRandom(t, srv, "hot.bin", size, 21)
	ranged, _ := putRandom(t, srv, "r.bin", 1<<20, 22)
	video, videoSHA := putRandom(t, srv, "v.mp4", 12<<20, 23)
	cache := filepath.Join(t.TempDir(), "slices")
	s := startCached(t, srv, proxy, cache)

	proxy.Reset()
	downloadAll(t, s.URL+"hot.bin", sha, size, 10)
	counts, _ := proxy.Counts()
	got, _ := proxy.Bytes()
	if counts["GET object"] != 3 || got["GET object"] != size {
		t.Errorf("ten downloads at once cost the bucket %d GETs and %d bytes; want 3 (a slice each) and %d (%s)", counts["GET object"], got["GET object"], size, s3test.Summary(counts))
	}

	t.Run("ranges", func(t *testing.T) { checkRanges(t, s.URL+"r.bin", ranged) })
	t.Run("resume", func(t *testing.T) {
		checkCurlResume(t, s.URL+"v.mp4", video[:9<<20+17], int64(len(video)), videoSHA)
	})

	// A restart: the slices kept are served without the bucket.
	s.signal(syscall.SIGTERM)
	if code := s.wait(20 * time.Second); code != 0 {
		t.Fatalf("largo exited %d at SIGTERM", code)
	}
	s = startCached(t, srv, proxy, cache)
	proxy.Reset()
	downloadAll(t, s.URL+"hot.bin", sha, size, 2)
	if counts, _ := proxy.Counts(); counts["GET object"] != 0 {
		t.Errorf("after a restart, downloads cost the bucket %d GETs; want none: the slices were kept", counts["GET object"])
	}

	// A replaced object is another version: fetched again.
	_, sha2 := putRandom(t, srv, "hot.bin", size, 24)
	downloadAll(t, s.URL+"hot.bin", sha2, size, 2)

	t.Run("one process per folder", func(t *testing.T) {
		code, _, errs := runLargo(t, proxy.Env(), "serve", "--store", "s3://"+srv.Bucket+"/", "--listen", "127.0.0.1:0", "--s3-cache", cache)
		if code != 2 || !strings.Contains(errs, "in use by another process") {
			t.Errorf("a second server on the cache's folder: exit %d, %q; want 2, and why", code, errs)
		}
	})
}

// downloadAll downloads u n times at once, each body checked against its
// SHA-256 and size.
func downloadAll(t *testing.T, u, sha string, size int64, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := http.Get(u)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			h := sha256.New()
			m, err := io.Copy(h, resp.Body)
			if got := hex.EncodeToString(h.Sum(nil)); err != nil || resp.StatusCode != 200 || got != sha || m != size {
				errs <- fmt.Errorf("%d, %d bytes (%v), sha %s; want 200, %d bytes, %s", resp.StatusCode, m, err, got, size, sha)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestS3SliceCacheRefused checks the mistakes --s3-cache refuses at
// start-up, each with one line: a folder store (its files are local
// already), a folder holding files that are not the cache's, and one the
// listings' sorted runs share.
func TestS3SliceCacheRefused(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	dir := t.TempDir()
	stranger := t.TempDir()
	if err := os.WriteFile(filepath.Join(stranger, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"folder", []string{"serve", dir, "--s3-cache", t.TempDir()}, "for a bucket"},
		{"stranger", []string{"serve", "--store", "s3://" + srv.Bucket, "--s3-cache", stranger}, "notes.txt is not the cache's"},
		{"listing runs", []string{"serve", "--store", "s3://" + srv.Bucket, "--s3-cache", filepath.Join(runs, "c"), "--listing-temp-dir", runs}, "give folders apart"},
		{"small", []string{"serve", "--store", "s3://" + srv.Bucket, "--s3-cache", t.TempDir(), "--s3-cache-size", "1MiB"}, "fewer than 8 slices"},
	} {
		code, _, errs := runLargo(t, srv.Env(), append(tt.args, "--listen", "127.0.0.1:0")...)
		if code != 2 || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: exit %d, %q; want 2 and one line with %q", tt.name, code, errs, tt.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(stranger, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the stranger's file: %q, %v", b, err)
	}
}

// redirectAccess sends anonymous downloads under /videos to the bucket.
const redirectAccess = `
[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/videos"
users = ["*"]
allow = ["read", "list"]
redirect = "presigned"
`

// TestS3RedirectPresigned serves a bucket whose access file redirects
// downloads under /videos: they are answered 307 to a URL the bucket
// itself serves (curl follows it, ranges too), other files are served by
// largo, and a folder's store refuses such an access file at start-up.
func TestS3RedirectPresigned(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	data, sha := putRandom(t, srv, "videos/a.bin", 3<<20+5, 31)
	_, bsha := putRandom(t, srv, "pub/b.bin", 1<<20, 32)
	access := writeAccessFile(t, redirectAccess)
	s := startS3Largo(t, srv, "", "--access", access)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(s.URL + "videos/a.bin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 307 || !strings.HasPrefix(loc, srv.Endpoint+"/") {
		t.Fatalf("GET /videos/a.bin: %d, Location %q; want 307 to the bucket at %s", resp.StatusCode, loc, srv.Endpoint)
	}
	curl := need(t, "curl")
	out := filepath.Join(t.TempDir(), "a.bin")
	if b, err := exec.Command(curl, "-sSfL", "-o", out, s.URL+"videos/a.bin").CombinedOutput(); err != nil {
		t.Fatalf("curl -L: %v %s", err, b)
	}
	if got := fileSHA(t, out); got != sha {
		t.Errorf("the redirected download's sha %s; want %s", got, sha)
	}
	b, err := exec.Command(curl, "-sSfL", "-r", "100-199", s.URL+"videos/a.bin").Output()
	if err != nil || !bytes.Equal(b, data[100:200]) {
		t.Errorf("a range through the redirect: %v, %d bytes", err, len(b))
	}
	checkFullDownload(t, s.URL+"pub/b.bin", bsha, 1<<20)
	if !waitFor(5*time.Second, func() bool {
		return strings.Contains(s.stderr.String(), "path=/videos/a.bin status=307 ")
	}) {
		t.Error("the access log has no 307 of the redirected download")
	}
	if !strings.Contains(s.stderr.String(), "downloads redirected to presigned URLs") {
		t.Error("the start-up log does not say which downloads bypass largo")
	}

	code, _, errs := runLargo(t, nil, "serve", t.TempDir(), "--access", access, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "needs a bucket") {
		t.Errorf("a folder with a redirecting access file: exit %d, %q; want 2 and why", code, errs)
	}
}
