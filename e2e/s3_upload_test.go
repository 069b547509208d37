//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"largo/s3/s3test"
)

// stateKeys lists the keys of uploads under largo's state folder in
// srv's bucket: not the share key, nor the records that finished uploads
// leave until they expire, nor the digests of the objects it holds, nor
// the address records of the instances running.
func stateKeys(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	var keys []string
	for _, k := range srv.Keys(t, srv.Bucket, ".largo/") {
		switch {
		case k == ".largo/share.key", k == ".largo/migrated/files-v1", strings.HasPrefix(k, ".largo/tus-done/"),
			strings.HasPrefix(k, ".largo/servers/"): // the address of an instance that runs
		case recordOfObject(t, srv, k):
		default:
			keys = append(keys, k)
		}
	}
	return keys
}

// recordOfObject reports whether the state key k is the record of an
// object the bucket holds (record.File: its digest, its owner): state
// that stays with the file, not left by an upload.
func recordOfObject(t *testing.T, srv *s3test.Server, k string) bool {
	if !strings.HasPrefix(k, ".largo/files/") {
		return false
	}
	b, ok := srv.Get(t, srv.Bucket, k)
	var rec struct{ Name string }
	if !ok || json.Unmarshal(b, &rec) != nil || rec.Name == "" {
		return false
	}
	_, ok = srv.Get(t, srv.Bucket, rec.Name)
	return ok
}

// onInstance returns an upload URL of one instance on another.
func onInstance(s *server, url string) string {
	_, rest, _ := strings.Cut(url, "/_largo/")
	return s.URL + "_largo/" + rest
}

// TestS3TwoInstancesWrite serves one bucket from two largo processes, as
// behind a load balancer with no affinity: a tus upload with
// tus-js-client begun through one, its client killed half-way, is resumed
// by a new client through the other; a PUT through one is served by the
// other, and removed through it.
func TestS3TwoInstancesWrite(t *testing.T) {
	const size, chunk, stop = 40 << 20, 6 << 20, 18 << 20
	src := filepath.Join(t.TempDir(), "clip.bin")
	want := writeRandom(t, src, size, 31)
	srv := s3test.Start(t, s3test.Options{})
	a := startS3Largo(t, srv, "", "--upload", "--token", testToken)
	b := startS3Largo(t, srv, "", "--upload", "--token", testToken)
	args := []string{"--file", src, "--name", "videos/clip.bin", "--token", testToken, "--chunk", strconv.Itoa(chunk)}

	first, uploadURL, accepted := stoppedTusClient(t, append(args, "--endpoint", a.URL+"_largo/uploads/", "--stop-at", strconv.Itoa(stop)), stop)
	first.Process.Kill()
	first.Wait()
	other := onInstance(b, uploadURL)
	// Both instances report the same offset: the state is the bucket's.
	var held int64
	if !waitFor(10*time.Second, func() bool {
		held = tusOffset(t, other)
		return held >= accepted && held == tusOffset(t, uploadURL)
	}) || held >= size {
		t.Fatalf("offset %d through the other instance, %d through the first; the client saw %d accepted", held, tusOffset(t, uploadURL), accepted)
	}
	if objectSHA(t, srv, "videos/clip.bin") != "" {
		t.Error("videos/clip.bin stored before the upload ends")
	}

	second := nodeScript(t, "tus-upload.mjs", append(args, "--endpoint", b.URL+"_largo/uploads/", "--url", other)...)
	res, err := second.CombinedOutput()
	if err != nil || !strings.Contains(string(res), "done ") {
		t.Fatalf("second client: %v\n%s", err, tail(string(res), 2000))
	}
	if r := metric(t, b, "largo_bytes_received_total"); r > size-float64(held)+2*chunk {
		t.Errorf("the second instance received %v bytes of the %d left: not resumed", r, size-held)
	}
	// Stored, and served by the instance the upload did not finish on.
	if got := objectSHA(t, srv, "videos/clip.bin"); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	resp := get(t, a.URL+"videos/clip.bin")
	if got, n := bodySHA(t, resp.Body); got != want || n != size {
		t.Fatalf("download through the first instance: %d bytes, sha %s", n, got)
	}
	// Finished, the upload stays on record, whole, for either instance.
	if n := tusOffset(t, onInstance(a, uploadURL)); n != size {
		t.Errorf("finished upload's offset %d; want %d", n, size)
	}
	if keys := stateKeys(t, srv); len(keys) != 0 {
		t.Errorf("state left in the bucket: %v", keys)
	}
	if n := multipartUploads(t, srv); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}

	// A PUT through one instance, seen and removed through the other (a
	// type never compressed: the ETag is the stored bytes').
	body := strings.Repeat("shared ", 1000)
	r, _ := put(t, a.URL+"notes.bin", strings.NewReader(body), int64(len(body)), bearer...)
	if r.StatusCode != 201 {
		t.Fatalf("PUT: %d", r.StatusCode)
	}
	if got := get(t, b.URL+"notes.bin", "If-None-Match", r.Header.Get("ETag")); got.StatusCode != 304 {
		t.Errorf("the other instance with the PUT's ETag: %d; want 304", got.StatusCode)
	}
	if r, _ := send(t, "DELETE", b.URL+"notes.bin", nil, 0, append([]string{"If-Match", r.Header.Get("ETag")}, bearer...)...); r.StatusCode != 204 {
		t.Errorf("DELETE through the other instance: %d", r.StatusCode)
	}
	if code := get(t, a.URL+"notes.bin").StatusCode; code != 404 {
		t.Errorf("after the DELETE: %d", code)
	}
}

// TestS3Kill9MidUpload kills the server during uploads to a bucket: a
// chunked PUT past its first part (a multipart upload in the bucket) and a
// tus upload. The target stays as it was; the next instance aborts the
// multipart uploads and removes the tus state once they are older than
// --upload-expiry.
func TestS3Kill9MidUpload(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Put(t, "target.bin", []byte("the old version"))
	s := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--s3-part-size", "5MiB")
	c := partialPutChunked(t, s.Addr, "/target.bin", 12<<20)
	defer c.Close()
	data := make([]byte, 6<<20)
	rand.NewChaCha8([32]byte{9}).Read(data)
	sum := sha256.Sum256(data)
	url, resp := tusCreate(t, s, 20<<20, map[string]string{"filename": "tus.bin", "sha256": hex.EncodeToString(sum[:])}, bearer...)
	if resp.StatusCode != 201 {
		t.Fatalf("tus create: %d", resp.StatusCode)
	}
	if r := tusPatch(t, url, 0, data); r.StatusCode != 204 {
		t.Fatalf("tus PATCH: %d", r.StatusCode)
	}
	if !waitFor(5*time.Second, func() bool { return multipartUploads(t, srv) == 2 }) {
		t.Fatalf("%d multipart uploads while the uploads run; want 2", multipartUploads(t, srv))
	}
	s.cmd.Process.Kill()
	s.wait(5 * time.Second)
	if b, _ := os.ReadFile(filepath.Join(srv.Dir, srv.Bucket, "target.bin")); string(b) != "the old version" {
		t.Fatalf("after kill -9 target.bin is %d bytes", len(b))
	}

	// Resumable through a new instance while it is young enough.
	s2 := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--upload-expiry", "1h")
	if off := tusOffset(t, onInstance(s2, url)); off != int64(len(data)) {
		t.Fatalf("after restart the offset is %d", off)
	}
	s2.cmd.Process.Kill()
	s2.wait(5 * time.Second)

	s3 := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--upload-expiry", "1s")
	if !waitFor(10*time.Second, func() bool { return multipartUploads(t, srv) == 0 && len(stateKeys(t, srv)) == 0 }) {
		t.Fatalf("after the expiry: %d multipart uploads, state %v", multipartUploads(t, srv), stateKeys(t, srv))
	}
	if !strings.Contains(s3.stderr.String(), "removed what interrupted writes left") {
		t.Errorf("no sweep in the log:\n%s", s3.stderr.String())
	}
	if r, _ := put(t, s3.URL+"target.bin", strings.NewReader("new"), 3, bearer...); r.StatusCode != 204 {
		t.Fatalf("PUT after the restarts: %d", r.StatusCode)
	}
}

// partialPutChunked sends the headers of a chunked PUT and sent bytes of
// its body, and returns the connection.
func partialPutChunked(t *testing.T, addr, path string, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n", path, addr, testToken)
	const piece = 64 << 10
	for n := 0; n < sent; n += piece {
		fmt.Fprintf(w, "%x\r\n", piece)
		w.Write(make([]byte, piece))
		w.WriteString("\r\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestS3NothingHalfWritten sends bodies past one part to a bucket that
// must not keep them: a digest that does not match, with the length
// announced (one PUT, its last byte held back) and chunked (a multipart
// upload, never completed), and a chunked body whose client vanishes. No
// object appears and no multipart upload is left.
func TestS3NothingHalfWritten(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--s3-part-size", "5MiB")
	body := strings.Repeat("not what was announced ", 12<<20/23)
	for _, size := range []int64{int64(len(body)), -1} {
		resp, msg := put(t, s.URL+"bad.bin", strings.NewReader(body), size, append([]string{"Content-Digest", reprDigest(sha("other"))}, bearer...)...)
		if resp.StatusCode != 400 || !strings.HasPrefix(msg, "digest mismatch") {
			t.Errorf("size %d, wrong digest: %d %q", size, resp.StatusCode, msg)
		}
	}
	c := partialPutChunked(t, s.Addr, "/cut.bin", 12<<20)
	if !waitFor(5*time.Second, func() bool { return multipartUploads(t, srv) == 1 }) {
		t.Fatalf("%d multipart uploads while the chunked body arrives; want 1", multipartUploads(t, srv))
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	if !waitFor(30*time.Second, func() bool { return multipartUploads(t, srv) == 0 }) {
		t.Errorf("%d multipart uploads left 30 s after the client vanished", multipartUploads(t, srv))
	}
	for _, name := range []string{"bad.bin", "cut.bin"} {
		absent(t, filepath.Join(srv.Dir, srv.Bucket), name)
	}
}
