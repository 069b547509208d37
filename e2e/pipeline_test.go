//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/testenv"
)

// TestReserveHeldByWritesInFlight: two PUTs that each fit above --reserve
// but together would eat into it. The second is refused with 507 before
// its body, while the first is still sending; the first is stored.
func TestReserveHeldByWritesInFlight(t *testing.T) {
	dir := t.TempDir()
	testenv.Tmpfs(t, dir, "64m", "to test the reserve")
	s := startWriter(t, dir, "--reserve", "16MiB")

	const size = 30 << 20
	gate := make(chan struct{})
	first := make(chan int, 1)
	go func() {
		// 1 MiB, then nothing until the second PUT has its answer.
		body := io.MultiReader(io.LimitReader(zeros{}, 1<<20), &gated{gate: gate, r: io.LimitReader(zeros{}, size-1<<20)})
		resp, _ := put(t, s.URL+"first.bin", body, size, bearer...)
		first <- resp.StatusCode
	}()
	if !waitFor(10*time.Second, func() bool {
		ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tmp"))
		return len(ents) == 1
	}) {
		close(gate)
		t.Fatal("the first PUT never started")
	}
	code := refusedStatus(t, s, "PUT", s.URL+"second.bin", io.LimitReader(zeros{}, size), size, bearer...)
	close(gate)
	if code != http.StatusInsufficientStorage {
		t.Errorf("second PUT while the first holds its space: %d; want 507", code)
	}
	if code := <-first; code != http.StatusCreated {
		t.Errorf("first PUT: %d; want 201", code)
	}
	absent(t, dir, "second.bin")
	if fi, err := os.Stat(filepath.Join(dir, "first.bin")); err != nil || fi.Size() != size {
		t.Errorf("first.bin: %v", err)
	}
	noTemp(t, dir)
	// The first one's bytes are on the disk now: a third PUT of the same
	// size does not fit, one that does is taken.
	if code := refusedStatus(t, s, "PUT", s.URL+"third.bin", io.LimitReader(zeros{}, size), size, bearer...); code != 507 {
		t.Errorf("third PUT: %d; want 507", code)
	}
	if resp, body := put(t, s.URL+"small.bin", strings.NewReader("small"), 5, bearer...); resp.StatusCode != 201 {
		t.Errorf("small PUT: %d %s", resp.StatusCode, body)
	}
}

// gated reads r once gate is closed.
type gated struct {
	gate chan struct{}
	r    io.Reader
}

func (g *gated) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// TestTusFinishedOnRecord: on a folder and on a bucket, a finished tus
// upload answers HEAD with its whole length and the placed file's ETag,
// and its last PATCH sent again is answered as done; on a folder, an
// upload whose bytes were all staged by a server killed before placing
// them is placed by the next HEAD, before it answers.
func TestTusFinishedOnRecord(t *testing.T) { forEachTarget(t, tusFinishedOnRecord) }

func tusFinishedOnRecord(t *testing.T, g *target) {
	s := g.serve(t)
	data := []byte(strings.Repeat("finished ", 5000))
	url, resp := tusCreate(t, s, int64(len(data)), map[string]string{"filename": "done.txt"}, bearer...)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if r := tusPatch(t, url, 0, data); r.StatusCode != 204 {
		t.Fatalf("PATCH: %d", r.StatusCode)
	}
	etag := get(t, s.URL+"done.txt", "Accept-Encoding", "identity").Header.Get("ETag")
	for _, method := range []string{"HEAD", "PATCH"} {
		var r *http.Response
		if method == "HEAD" {
			r, _ = send(t, "HEAD", url, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearer...)...)
		} else {
			r = tusPatch(t, url, int64(len(data)), nil)
		}
		if r.StatusCode/100 != 2 || r.Header.Get("Upload-Offset") != strconv.Itoa(len(data)) || r.Header.Get("ETag") != etag || etag == "" {
			t.Errorf("%s after completion: %d, offset %q, ETag %q (file %q)", method, r.StatusCode, r.Header.Get("Upload-Offset"), r.Header.Get("ETag"), etag)
		}
	}
	if g.srv != nil {
		return
	}

	// The crash window, on a folder: the server is killed, the last bytes
	// reach the staging as if its last write had just ended.
	url, _ = tusCreate(t, s, int64(len(data)), map[string]string{"filename": "crash.txt"}, bearer...)
	if r := tusPatch(t, url, 0, data[:1000]); r.StatusCode != 204 {
		t.Fatalf("first PATCH: %d", r.StatusCode)
	}
	s.signal(syscall.SIGKILL)
	s.wait(10 * time.Second)
	staged, err := os.OpenFile(filepath.Join(g.dir, ".largo", "tus", path.Base(url)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	staged.Write(data[1000:])
	staged.Close()
	absent(t, g.dir, "crash.txt")
	s = g.serve(t)
	url = s.URL + strings.TrimPrefix(url[strings.Index(url, "_largo/"):], "/")
	r, _ := send(t, "HEAD", url, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearer...)...)
	if r.StatusCode != 200 || r.Header.Get("Upload-Offset") != strconv.Itoa(len(data)) || r.Header.Get("ETag") == "" {
		t.Fatalf("HEAD after the crash: %d, offset %q, ETag %q", r.StatusCode, r.Header.Get("Upload-Offset"), r.Header.Get("ETag"))
	}
	if b, err := os.ReadFile(filepath.Join(g.dir, "crash.txt")); err != nil || string(b) != string(data) {
		t.Fatalf("crash.txt after HEAD: %v", err)
	}
	g.clean(t)
}
