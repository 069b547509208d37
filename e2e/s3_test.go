//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"largo/proc"
	"largo/s3/s3test"
)

// startS3Largo runs `largo serve --store s3://BUCKET/prefix` against srv,
// configured through the standard AWS variables.
func startS3Largo(t testing.TB, srv *s3test.Server, prefix string, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "--store", "s3://" + srv.Bucket + "/" + prefix, "--listen", "127.0.0.1:0"}, withAdmin(args)...)
	return startLargo(t, args, srv.Env())
}

// putRandom stores size pseudo-random bytes at key and returns them with
// their sha256.
func putRandom(t *testing.T, srv *s3test.Server, key string, size int64, seed uint64) ([]byte, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "object")
	sha := writeRandom(t, p, size, seed)
	srv.PutFile(t, key, p)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data, sha
}

// storePort returns the port of srv, for counting connections to it.
func storePort(t testing.TB, srv *s3test.Server) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// storeConns returns the connections the largo process holds to srv: busy
// ones (an answer in flight or unread, or closed by the store and not by
// largo) and idle ones (kept alive in the pool for the next request).
func storeConns(t testing.TB, s *server, srv *s3test.Server) (busy, idle int) {
	t.Helper()
	conns, err := proc.TCPConnsTo(s.PID, storePort(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		if c.Idle() {
			idle++
		} else {
			busy++
		}
	}
	return busy, idle
}

// TestS3Download runs the download checks of the disk store against a
// bucket: whole files with Go's client and curl, ranges, conditional
// requests, 304 and 416, and curl -C - resume.
func TestS3Download(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	_, fullSHA := putRandom(t, srv, "site/data.bin", 64<<20+7, 1)
	ranged, _ := putRandom(t, srv, "site/r.bin", 1<<20, 2)
	video, videoSHA := putRandom(t, srv, "site/media/v.mp4", 32<<20, 3)
	srv.Put(t, "site/.env", []byte("SECRET"))
	srv.Put(t, "outside", []byte("not under the prefix"))
	s := startS3Largo(t, srv, "site")

	t.Run("full", func(t *testing.T) { checkFullDownload(t, s.URL+"data.bin", fullSHA, 64<<20+7) })
	t.Run("ranges", func(t *testing.T) { checkRanges(t, s.URL+"r.bin", ranged) })
	t.Run("resume", func(t *testing.T) {
		checkCurlResume(t, s.URL+"media/v.mp4", video[:13<<20+17], int64(len(video)), videoSHA)
	})
	t.Run("headers", func(t *testing.T) {
		resp := get(t, s.URL+"media/v.mp4", "Range", "bytes=0-0")
		if ct := resp.Header.Get("Content-Type"); ct != "video/mp4" {
			t.Errorf("Content-Type %q; want video/mp4 from the extension", ct)
		}
		if et := resp.Header.Get("ETag"); !regexp.MustCompile(`^"[0-9a-f]{32}(-[0-9]+)?"$`).MatchString(et) {
			t.Errorf("ETag %q; want the object's, quoted", et)
		}
	})
	t.Run("listing and hiding", func(t *testing.T) {
		resp := get(t, s.URL+"?format=json")
		var l struct {
			Entries []struct {
				Name string
				Dir  bool
				Size int64
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(l.Entries)
		if want := "[{media true 0} {data.bin false 67108871} {r.bin false 1048576}]"; got != want {
			t.Errorf("listing %s; want %s", got, want)
		}
		for _, p := range []string{".env", "outside", "media", "nothing"} {
			if code := get(t, s.URL+p).StatusCode; code != 404 && !(p == "media" && code == 301) {
				t.Errorf("GET /%s: %d", p, code)
			}
		}
	})
}

// TestS3ObjectReplaced replaces an object: a resume with the old ETag in
// If-Range restarts with the whole new object, and a download in flight
// across the replacement is cut rather than finished with bytes of the new
// version.
func TestS3ObjectReplaced(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	const size = 32 << 20
	putRandom(t, srv, "v.bin", size, 10)
	s := startS3Largo(t, srv, "")
	u := s.URL + "v.bin"
	oldTag := get(t, u, "Range", "bytes=0-0").Header.Get("ETag")

	v2, v2SHA := putRandom(t, srv, "v.bin", size, 11)
	resp := get(t, u, "Range", "bytes=1000-", "If-Range", oldTag)
	got, n := bodySHA(t, resp.Body)
	if resp.StatusCode != 200 || got != v2SHA || n != size || resp.Header.Get("ETag") == oldTag {
		t.Fatalf("resume with a stale If-Range: %d, %d bytes, ETag %s; want 200 and the whole new object", resp.StatusCode, n, resp.Header.Get("ETag"))
	}

	// A download that reads slowly while the object is replaced.
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "GET /v.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
	r, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("GET: %v", err)
	}
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(r.Body, head); err != nil {
		t.Fatal(err)
	}
	putRandom(t, srv, "v.bin", size, 12)
	rest, err := io.ReadAll(r.Body)
	body := append(head, rest...)
	if err == nil || len(body) >= size {
		t.Fatalf("download across the replacement ended cleanly with %d bytes (err %v); want it cut", len(body), err)
	}
	if !bytes.Equal(body, v2[:len(body)]) {
		t.Fatalf("the %d bytes received before the cut are not all of the version the download began with", len(body))
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(s.stderr.String(), "changed since it was opened") }) {
		t.Error("the log does not say why the download was cut")
	}
}

// goroutines returns the server's goroutine count, from pprof on the
// admin listener.
func goroutines(t *testing.T, s *server) int {
	t.Helper()
	if s.Admin == "" {
		t.Fatal("no admin address announced")
	}
	// A connection of its own, closed at once, so that asking adds no
	// goroutine to the count.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(s.Admin + "debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var n int
	if _, err := fmt.Sscanf(line, "goroutine profile: total %d", &n); err != nil {
		t.Fatalf("goroutine profile %q: %v", line, err)
	}
	return n
}

// TestS3AbortedDownloads aborts 50 downloads of a bucket's object mid-way:
// afterwards the server holds no connection to the store with an answer in
// flight, and no more descriptors or goroutines than idle. The store closes
// connections after each answer, so a connection left with data is one
// largo failed to close. Go's transport may still pool a connection whose
// dial finished after its request was cancelled: such a connection is idle
// (nothing in flight), reused by the next request, and closed after the
// pool's idle timeout; it is counted apart, and allowed.
func TestS3AbortedDownloads(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{NoKeepAlive: true})
	srv.PlaceSparse(t, "big.iso", 256<<20, []byte("end"))
	s := startS3Largo(t, srv, "", "--admin-listen", "127.0.0.1:0")
	get(t, s.URL+"_largo/healthz")
	goroutines(t, s) // warm up the admin listener too
	idleFDs := s.idleFDs()
	idleG := goroutines(t, s)

	abortDownloads(t, s.Addr, "/big.iso", 50)
	var busy, pooled, fds, g int
	settled := waitFor(10*time.Second, func() bool {
		busy, pooled = storeConns(t, s, srv)
		fds, g = s.fds(), goroutines(t, s)
		// Each pooled connection holds a descriptor and two goroutines.
		return busy == 0 && fds-pooled <= idleFDs && g-2*pooled <= idleG
	})
	if !settled {
		t.Fatalf("after the aborts: %d busy and %d pooled connections to the store, %d descriptors (%d idle), %d goroutines (%d idle)",
			busy, pooled, fds, idleFDs, g, idleG)
	}
	if pooled > 0 {
		t.Logf("%d idle connections left in the pool", pooled)
	}
	if !strings.Contains(s.stderr.String(), "outcome=aborted") {
		t.Error("no aborted outcome in the access log")
	}
}

// TestS3StalledClient asks for a 5 GiB object and never reads: the server
// must fetch from the store little beyond what the client's socket took,
// and cut the client after the idle timeout, closing its store
// connection. (What the stall costs in memory is BenchmarkStalledClient's
// figure.)
func TestS3StalledClient(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{NoKeepAlive: true})
	const size = 5 << 30
	srv.PlaceSparse(t, "stall.bin", size, []byte("end"))
	srv.Put(t, warmUpFile, []byte(warmUpBody))
	s := startS3Largo(t, srv, "", "--idle-timeout", "3s")
	s.warmUp(warmUpFile)
	io0, err := proc.ReadIO(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	fds0 := s.fds()
	store0, _ := proc.ReadIO(srv.PID)

	stalledGet(t, s.Addr, "/stall.bin")
	time.Sleep(2 * time.Second) // the client stalls

	io1, err := proc.ReadIO(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	store1, _ := proc.ReadIO(srv.PID)
	fetched, sent := io1.RChar-io0.RChar, io1.WChar-io0.WChar
	t.Logf("largo fetched %d KiB, its client socket took %d KiB; the store read %d KiB and wrote %d KiB",
		fetched>>10, sent>>10, (store1.RChar-store0.RChar)>>10, (store1.WChar-store0.WChar)>>10)
	if fetched-sent > 2<<20 || fetched > 32<<20 {
		t.Errorf("largo fetched %d KiB from the store for a client whose socket took %d KiB", fetched>>10, sent>>10)
	}
	if busy, idle := storeConns(t, s, srv); busy+idle != 1 {
		t.Errorf("%d+%d connections to the store during the transfer; want 1", busy, idle)
	}
	var busy, pooled int
	if !waitFor(8*time.Second, func() bool {
		busy, pooled = storeConns(t, s, srv)
		return busy == 0 && s.fds()-pooled <= fds0
	}) {
		t.Fatalf("after the idle timeout: %d busy and %d pooled connections to the store, %d descriptors (%d idle)", busy, pooled, s.fds(), fds0)
	}
	if !strings.Contains(s.stderr.String(), "outcome=timeout") {
		t.Error("no timeout outcome in the access log")
	}
}

// TestS3TwoInstances serves one bucket from two largo processes, as behind
// a load balancer with no affinity: both give the same validators, and a
// download begun on one resumes on the other.
func TestS3TwoInstances(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	const size = 8 << 20
	data, sha := putRandom(t, srv, "shared.bin", size, 20)
	a := startS3Largo(t, srv, "")
	b := startS3Largo(t, srv, "")

	ha := get(t, a.URL+"shared.bin", "Range", "bytes=0-0").Header
	hb := get(t, b.URL+"shared.bin", "Range", "bytes=0-0").Header
	for _, k := range []string{"ETag", "Last-Modified", "Content-Range", "Content-Type"} {
		if ha.Get(k) != hb.Get(k) || ha.Get(k) == "" {
			t.Errorf("%s: %q from one instance, %q from the other", k, ha.Get(k), hb.Get(k))
		}
	}
	etag := ha.Get("ETag")

	// The first half from a, the rest from b under If-Range.
	first := get(t, a.URL+"shared.bin", "Range", fmt.Sprintf("bytes=0-%d", size/2-1))
	half, _ := io.ReadAll(first.Body)
	second := get(t, b.URL+"shared.bin", "Range", fmt.Sprintf("bytes=%d-", size/2), "If-Range", etag)
	rest, _ := io.ReadAll(second.Body)
	if first.StatusCode != 206 || second.StatusCode != 206 || !bytes.Equal(append(half, rest...), data) {
		t.Fatalf("split download: %d then %d, %d+%d bytes", first.StatusCode, second.StatusCode, len(half), len(rest))
	}
	if code := get(t, b.URL+"shared.bin", "If-None-Match", etag).StatusCode; code != 304 {
		t.Errorf("If-None-Match with the other instance's ETag: %d; want 304", code)
	}
	checkCurlResume(t, b.URL+"shared.bin", data[:3<<20], size, sha)

	// A replacement is seen by both at once: nothing is cached.
	_, sha2 := putRandom(t, srv, "shared.bin", size, 21)
	for _, s := range []*server{a, b} {
		resp := get(t, s.URL+"shared.bin", "Range", "bytes=100-", "If-Range", etag)
		got, _ := bodySHA(t, resp.Body)
		if resp.StatusCode != 200 || got != sha2 {
			t.Errorf("after the replacement: %d, sha %s; want 200 and the new object", resp.StatusCode, got)
		}
	}
}

// TestS3Archives downloads a bucket's folder as tar and as zip, and
// unpacks both with the system's tools. The tree is put in the S3 server's
// own folder, where its files become objects. Its sparse file is smaller
// than the disk test's 5 GiB, which already covers the large-file formats:
// here every byte crosses two HTTP hops.
func TestS3Archives(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	const big = 1 << 30
	_, want := archiveTreeIn(t, filepath.Join(srv.Dir, srv.Bucket), false, big)
	// A bucket's empty folder is a marker object; the server shows a bare
	// directory in its parent's listing but nowhere else.
	srv.Put(t, "set/empty/", nil)
	s := startS3Largo(t, srv, "")
	s.warmUp("set/top.txt")
	t.Run("tar", func(t *testing.T) { testArchiveTar(t, s, want, big) })
	t.Run("zip", func(t *testing.T) { testArchiveZip(t, s, want, big) })
}

// TestS3StartErrors: a bucket that does not exist, refused credentials or
// an unreachable endpoint stop largo at start-up with one line and exit
// code 2.
func TestS3StartErrors(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	dead := s3test.Unreachable(t)
	for _, tt := range []struct {
		name  string
		store string
		env   []string
		want  string
	}{
		{"missing bucket", "s3://no-such-bucket/", nil, `bucket "no-such-bucket" does not exist`},
		{"wrong secret", "s3://" + srv.Bucket, []string{"AWS_SECRET_ACCESS_KEY=wrong"}, "refused the credentials"},
		{"unreachable", "s3://" + srv.Bucket, []string{"AWS_ENDPOINT_URL=" + dead}, "cannot reach the endpoint"},
		{"bad url", "s3://", nil, "--store"},
	} {
		env := append(srv.Env(), tt.env...)
		code, out, errs := runLargo(t, env, "serve", "--store", tt.store, "--listen", "127.0.0.1:0")
		if code != 2 || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || out != "" {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line with %q", tt.name, code, errs, tt.want)
		}
	}
	// Write settings out of S3's bounds.
	for _, bad := range [][]string{{"--s3-part-size", "4MiB"}, {"--s3-part-size", "6GiB"}, {"--s3-part-concurrency", "0"}} {
		code, _, errs := runLargo(t, srv.Env(), append([]string{"serve", "--store", "s3://" + srv.Bucket, "--upload", "--listen", "127.0.0.1:0"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[0]) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line naming the flag", bad, code, errs)
		}
	}
	var code int
	var errs string
	// The flag wins over the variable.
	code, _, errs = runLargo(t, append(srv.Env(), "AWS_ENDPOINT_URL="+dead), "serve", "--store", "s3://no-such-bucket", "--s3-endpoint", srv.Endpoint, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "does not exist") {
		t.Errorf("--s3-endpoint over AWS_ENDPOINT_URL: exit %d, %q", code, errs)
	}
}
