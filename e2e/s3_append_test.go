//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"largo/s3/s3test"
)

// slowAppend sends a PATCH whose body of data arrives slowly: its first
// part at once, the rest only when release is closed. The answer comes on
// the returned channel.
func slowAppend(t *testing.T, url string, data []byte, first int, release <-chan struct{}, hdr ...string) <-chan *http.Response {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("PATCH", url, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(data))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	go func() {
		pw.Write(data[:first])
		<-release
		for rest := data[first:]; len(rest) > 0; {
			n := min(len(rest), 64<<10)
			if _, err := pw.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		pw.Close()
	}()
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			pr.CloseWithError(err)
			done <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp
	}()
	t.Cleanup(func() { pr.CloseWithError(io.ErrClosedPipe) })
	return done
}

// inFlight waits until the first append is under way: its first bytes
// received by a, and its lease in the bucket.
// (base: what a had received before).
func inFlight(t *testing.T, a *server, srv *s3test.Server, base float64) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool { return metric(t, a, "largo_bytes_received_total") >= base+64<<10 }) {
		t.Fatal("the first append's bytes did not arrive")
	}
	if len(leaseKeys(t, srv)) == 0 {
		t.Error("the first append holds no lease")
	}
}

// firstAlone lets the first append's last bytes go, and checks its answer
// (code), that name holds its bytes alone (sha want), and that no lease
// is left.
func firstAlone(t *testing.T, srv *s3test.Server, release chan struct{}, first <-chan *http.Response, code int, name, want string) {
	t.Helper()
	close(release)
	if resp := <-first; resp == nil || resp.StatusCode != code {
		t.Fatalf("the first append: %v; want %d", resp, code)
	}
	if got := objectSHA(t, srv, name); got != want {
		t.Errorf("stored sha %s; want the first client's %s", got, want)
	}
	if keys := leaseKeys(t, srv); len(keys) != 0 {
		t.Errorf("leases left: %v", keys)
	}
}

// leaseKeys lists the records of the appends in flight in the bucket.
func leaseKeys(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	return srv.Keys(t, srv.Bucket, ".largo/uploads/leases/")
}

// TestS3ConcurrentAppends: two largo processes on one bucket, two appends
// to one upload at the same moment, the first one's bytes arriving slowly:
// the second, through the other instance, is refused (tus: 423, IETF:
// 409) before it takes a byte, and the stored file is the first one's
// bytes alone, never interleaved. Once the first append is over the other
// instance takes appends again.
func TestS3ConcurrentAppends(t *testing.T) {
	const size = 3 << 20
	data := make([]byte, size)
	rnd := rand.New(rand.NewPCG(7, 9))
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	intruder := bytes.Repeat([]byte("X"), 256<<10)

	srv := s3test.Start(t, s3test.Options{})
	a := startS3Largo(t, srv, "", "--upload", "--token", testToken)
	b := startS3Largo(t, srv, "", "--upload", "--token", testToken)

	t.Run("tus", func(t *testing.T) {
		meta := "filename " + base64.StdEncoding.EncodeToString([]byte("tus.bin"))
		resp, text := send(t, "POST", a.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", strconv.Itoa(size), "Upload-Metadata", meta}, bearer...)...)
		if resp.StatusCode != 201 {
			t.Fatalf("creation: %d %s", resp.StatusCode, text)
		}
		upload := resp.Header.Get("Location")
		tusHdr := append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream"}, bearer...)
		release := make(chan struct{})
		base := metric(t, a, "largo_bytes_received_total")
		first := slowAppend(t, upload, data, 64<<10, release, tusHdr...)
		inFlight(t, a, srv, base)
		for range 2 {
			resp, text := send(t, "PATCH", onInstance(b, upload), bytes.NewReader(intruder), int64(len(intruder)), tusHdr...)
			if resp.StatusCode != 423 || strings.Contains(strings.TrimSpace(text), "\n") {
				t.Errorf("a PATCH through the other instance during the first: %d %q; want 423 and one line", resp.StatusCode, text)
			}
		}
		if resp, text := send(t, "DELETE", onInstance(b, upload), nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearer...)...); resp.StatusCode != 423 {
			t.Errorf("a termination through the other instance during the append: %d %q; want 423", resp.StatusCode, text)
		}
		firstAlone(t, srv, release, first, 204, "tus.bin", want)
	})

	t.Run("ietf", func(t *testing.T) {
		resp, text := send(t, "PUT", a.URL+"ietf.bin", nil, 0, ietfHeaders("Upload-Complete", "?0", "Upload-Length", strconv.Itoa(size))...)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 201 || loc == "" {
			t.Fatalf("creation: %d %s", resp.StatusCode, text)
		}
		upload := a.URL + strings.TrimPrefix(loc, "/")
		release := make(chan struct{})
		base := metric(t, a, "largo_bytes_received_total")
		first := slowAppend(t, upload, data, 64<<10, release, appendHeaders(0, true)...)
		inFlight(t, a, srv, base)
		resp, text = send(t, "PATCH", b.URL+strings.TrimPrefix(loc, "/"), bytes.NewReader(intruder), int64(len(intruder)), appendHeaders(0, false)...)
		if resp.StatusCode != 409 || resp.Header.Get("Upload-Offset") == "" || strings.Contains(strings.TrimSpace(text), "\n") {
			t.Errorf("an append through the other instance during the first: %d %v %q; want 409 with Upload-Offset, one line", resp.StatusCode, resp.Header, text)
		}
		if resp, text := send(t, "DELETE", b.URL+strings.TrimPrefix(loc, "/"), nil, 0, ietfHeaders()...); resp.StatusCode != 409 {
			t.Errorf("a cancellation through the other instance during the append: %d %q; want 409", resp.StatusCode, text)
		}
		firstAlone(t, srv, release, first, 201, "ietf.bin", want)
	})

	t.Run("after", func(t *testing.T) {
		// Appends through the other instance go on once none is in flight.
		meta := "filename " + base64.StdEncoding.EncodeToString([]byte("after.bin"))
		resp, _ := send(t, "POST", a.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", "6", "Upload-Metadata", meta}, bearer...)...)
		upload := resp.Header.Get("Location")
		hdr := func(off int) []string {
			return append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", strconv.Itoa(off), "Content-Type", "application/offset+octet-stream"}, bearer...)
		}
		if resp, text := send(t, "PATCH", upload, strings.NewReader("abc"), 3, hdr(0)...); resp.StatusCode != 204 {
			t.Fatalf("first half through a: %d %s", resp.StatusCode, text)
		}
		if resp, text := send(t, "PATCH", onInstance(b, upload), strings.NewReader("def"), 3, hdr(3)...); resp.StatusCode != 204 {
			t.Fatalf("second half through b: %d %s", resp.StatusCode, text)
		}
		if b, ok := srv.Get(t, srv.Bucket, "after.bin"); !ok || string(b) != "abcdef" {
			t.Errorf("after.bin = %q, %v", b, ok)
		}
	})
}

// TestAppendAfterCrash: a server killed in the middle of an append leaves
// its lease behind; the server started again on the same folder takes
// the upload's appends back at once (the lease's process is gone), not a
// minute later.
func TestAppendAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s := startWriter(t, dir)
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte("crash.bin"))
	const size = 1 << 20
	resp, text := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", strconv.Itoa(size), "Upload-Metadata", meta}, bearer...)...)
	if resp.StatusCode != 201 {
		t.Fatalf("creation: %d %s", resp.StatusCode, text)
	}
	upload := resp.Header.Get("Location")
	data := bytes.Repeat([]byte("c"), size)
	hdr := func(off int64) []string {
		return append([]string{"Tus-Resumable", "1.0.0", "Upload-Offset", strconv.FormatInt(off, 10), "Content-Type", "application/offset+octet-stream"}, bearer...)
	}
	slowAppend(t, upload, data, 64<<10, make(chan struct{}), hdr(0)...)
	leases := filepath.Join(dir, ".largo", "uploads", "leases")
	if !waitFor(10*time.Second, func() bool { ents, _ := os.ReadDir(leases); return len(ents) > 0 }) {
		t.Fatal("the append holds no lease")
	}
	s.cmd.Process.Kill()
	s.wait(10 * time.Second)
	s2 := startWriter(t, dir)
	again := onInstance(s2, upload)
	off := tusOffset(t, again)
	if off < 0 || off > size {
		t.Fatalf("offset after the restart: %d", off)
	}
	if resp, text := send(t, "PATCH", again, bytes.NewReader(data[off:]), size-off, hdr(off)...); resp.StatusCode != 204 {
		t.Fatalf("PATCH after the restart: %d %q; want 204 at once", resp.StatusCode, text)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "crash.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("crash.bin: %d bytes, %v", len(got), err)
	}
}
