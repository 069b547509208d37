//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/proc"
)

// reprDigestOf is the Repr-Digest field of a SHA-256 given in
// hexadecimal, as sha256sum prints it.
func reprDigestOf(t testing.TB, hexSum string) string {
	t.Helper()
	b, err := hex.DecodeString(hexSum)
	if err != nil {
		t.Fatal(err)
	}
	return "sha-256=:" + base64.StdEncoding.EncodeToString(b) + ":"
}

// sha256sum runs sha256sum on path and returns its digest.
func sha256sum(t testing.TB, path string) string {
	t.Helper()
	out, err := exec.Command(need(t, "sha256sum"), path).Output()
	if err != nil {
		t.Fatalf("sha256sum %s: %v", path, err)
	}
	return strings.Fields(string(out))[0]
}

// headDigest returns the Repr-Digest of a HEAD of url that asks for it.
func headDigest(t testing.TB, url string) string {
	t.Helper()
	req, _ := http.NewRequest("HEAD", url, nil)
	req.Header.Set("Want-Repr-Digest", "sha-256=10")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD %s: %s", url, resp.Status)
	}
	return resp.Header.Get("Repr-Digest")
}

// TestDigestsEveryUpload: whatever carried a file (PUT, a form, tus, the
// IETF protocol, WebDAV's PUT, COPY and MOVE, the page's move), a HEAD
// answers Repr-Digest equal to what sha256sum computes of the file stored;
// a file replaced behind the server's back loses it until largo digest
// hashes it again.
func TestDigestsEveryUpload(t *testing.T) {
	curl := need(t, "curl")
	need(t, "sha256sum")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t, "--webdav")
		src := filepath.Join(t.TempDir(), "src.bin")
		writeRandom(t, src, 5<<20+7, 41)
		stored := func(name string) string { return filepath.Join(g.dir, filepath.FromSlash(name)) }
		check := func(what, name string) {
			t.Helper()
			if got, want := headDigest(t, s.URL+name), reprDigestOf(t, sha256sum(t, stored(name))); got != want {
				t.Errorf("%s: HEAD %s: Repr-Digest %q; sha256sum says %q", what, name, got, want)
			}
		}
		run := func(name string, args ...string) {
			t.Helper()
			if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
		}

		run(curl, "-sSf", "-T", src, "-H", "Authorization: Bearer "+testToken, s.URL+"up/put.bin")
		check("PUT", "up/put.bin")

		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		fw, _ := mw.CreateFormFile("file", "form.bin")
		f, _ := os.Open(src)
		io.Copy(fw, f)
		f.Close()
		mw.Close()
		if resp, body := send(t, "POST", s.URL+"up/", &form, int64(form.Len()), append([]string{"Content-Type", mw.FormDataContentType()}, bearer...)...); resp.StatusCode >= 300 {
			t.Fatalf("form: %s %s", resp.Status, body)
		}
		check("a form", "up/form.bin")

		run(largoBin, "put", "--token", testToken, src, s.URL+"up/tus.bin")
		check("tus", "up/tus.bin")
		run(largoBin, "put", "--token", testToken, "--protocol", "ietf", src, s.URL+"up/ietf.bin")
		check("IETF", "up/ietf.bin")

		dav := []string{"-sSf", "-H", "Authorization: Bearer " + testToken}
		run(curl, append(dav, "-T", src, s.URL+"dav/put.bin")...)
		check("WebDAV PUT", "dav/put.bin")
		run(curl, append(dav, "-X", "COPY", "-H", "Destination: "+s.URL+"dav/copy.bin", s.URL+"up/put.bin")...)
		check("WebDAV COPY", "dav/copy.bin")
		run(curl, append(dav, "-X", "MOVE", "-H", "Destination: "+s.URL+"dav/moved.bin", s.URL+"dav/copy.bin")...)
		check("WebDAV MOVE", "dav/moved.bin")
		run(curl, append(dav, "-X", "MOVE", "-H", "Destination: "+s.URL+"moved/", s.URL+"dav/")...)
		check("WebDAV MOVE of a folder", "moved/moved.bin")
		run(curl, append(dav, "-d", "from=/up/form.bin&to=/up/renamed.bin", s.URL+"_largo/move")...)
		check("the page's move", "up/renamed.bin")

		// Replaced behind the server's back: the old digest is not served.
		g.seed(t, "up/put.bin", "something else")
		if got := headDigest(t, s.URL+"up/put.bin"); got != "" {
			t.Errorf("a file replaced out of band: Repr-Digest %q", got)
		}
		hashArgs := []string{"digest", stored("up/put.bin")}
		var env []string
		if g.srv != nil {
			hashArgs = []string{"digest", "--store", "s3://" + g.srv.Bucket + "/", "up/put.bin"}
			env = g.srv.Env()
		}
		cmd := exec.Command(largoBin, hashArgs...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 files hashed") {
			t.Fatalf("largo digest: %v\n%s", err, out)
		}
		// Recorded by another process: served once the server's belief
		// that there is none expires (digests.DefaultNegativeTTL).
		want := reprDigestOf(t, sha256sum(t, stored("up/put.bin")))
		if !waitFor(15*time.Second, func() bool { return headDigest(t, s.URL+"up/put.bin") == want }) {
			t.Errorf("hashed by largo digest: Repr-Digest %q; want %q", headDigest(t, s.URL+"up/put.bin"), want)
		}
		g.clean(t)
	})
}

// TestDigestSums: a folder of 1,000 files answers a SHA256SUMS that
// sha256sum -c accepts, and largo get (-r too) checks what it downloads.
func TestDigestSums(t *testing.T) {
	need(t, "sha256sum")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t)
		var wg sync.WaitGroup
		names := make(chan string)
		for range 8 {
			wg.Go(func() {
				for name := range names {
					body := fmt.Sprintf("file %s\n", name)
					if resp, b := put(t, s.URL+"many/"+name, strings.NewReader(body), int64(len(body)), bearer...); resp.StatusCode != http.StatusCreated {
						t.Errorf("PUT %s: %s %s", name, resp.Status, b)
					}
				}
			})
		}
		for i := range 1000 {
			names <- fmt.Sprintf("%04d.txt", i)
		}
		close(names)
		wg.Wait()

		resp := get(t, s.URL+"many/SHA256SUMS")
		sums, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || bytes.Count(sums, []byte("\n")) != 1000 {
			t.Fatalf("SHA256SUMS: %s, %d lines", resp.Status, bytes.Count(sums, []byte("\n")))
		}
		check := exec.Command(need(t, "sha256sum"), "-c", "--strict", "--quiet", "-")
		check.Dir = filepath.Join(g.dir, "many")
		check.Stdin = bytes.NewReader(sums)
		if out, err := check.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
		}

		out := t.TempDir()
		get := exec.Command(largoBin, "get", s.URL+"many/0007.txt", "-o", filepath.Join(out, "one.txt"))
		if b, err := get.CombinedOutput(); err != nil || !strings.Contains(string(b), "verified against the server's sha-256") {
			t.Errorf("largo get: %v\n%s", err, b)
		}
		tree := exec.Command(largoBin, "get", "-r", s.URL+"many/", "-o", filepath.Join(out, "many"))
		if b, err := tree.CombinedOutput(); err != nil || !strings.Contains(string(b), "1000 of 1000 verified against the server's digest") {
			t.Errorf("largo get -r: %v\n%s", err, b)
		}
	})
}

// BenchmarkDigestHeads sends 512 HEADs at once, each asking for the
// digest of a 256 MiB file stored through a PUT, and reports what the
// server read meanwhile: rchar-bytes/op, every byte its read calls
// returned (records included), and read-bytes/op, what it made the disk
// read. The digest is the one kept at upload: the file itself is never
// read.
func BenchmarkDigestHeads(b *testing.B) {
	dir := b.TempDir()
	s := startServer(b, dir, "--upload", "--token", testToken, "--max-conns-per-ip", "0")
	src := filepath.Join(b.TempDir(), "big.bin")
	want := writeRandom(b, src, 256<<20, 9)
	f, _ := os.Open(src)
	resp, body := put(b, s.URL+"big.bin", f, 256<<20, bearer...)
	f.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("PUT: %s %s", resp.Status, body)
	}
	field := reprDigestOf(b, want)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	head := func() error {
		req, _ := http.NewRequest("HEAD", s.URL+"big.bin", nil)
		req.Header.Set("Want-Repr-Digest", "sha-256=10")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if got := resp.Header.Get("Repr-Digest"); got != field {
			return fmt.Errorf("Repr-Digest %q; want %q", got, field)
		}
		return nil
	}
	if err := head(); err != nil {
		b.Fatal(err)
	}
	before, err := proc.ReadIO(s.PID)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, 512)
		for range 512 {
			wg.Go(func() {
				if err := head(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, err := proc.ReadIO(s.PID)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after.RChar-before.RChar)/float64(b.N), "rchar-bytes/op")
	b.ReportMetric(float64(after.ReadBytes-before.ReadBytes)/float64(b.N), "read-bytes/op")
}

// TestDigestsInBackground: with the default --digest-rate, files copied
// onto the disk before the server started get their digest and CRC-32
// from its background pass: a download is verified, and a zip of their
// folder answers a range, so that a cut zip download resumes.
func TestDigestsInBackground(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "copied", "a.bin"), 3<<20, 81)
	writeRandom(t, filepath.Join(dir, "copied", "b.bin"), 1<<20, 82)
	s := startServer(t, dir, "--digest-rate", "20MB/s") // the default, which the harness turns off
	if !waitFor(30*time.Second, func() bool { return headDigest(t, s.URL+"copied/b.bin") != "" }) {
		t.Fatal("no digest of a copied file 30s after the start")
	}
	if got := headDigest(t, s.URL+"copied/a.bin"); got != reprDigestOf(t, want) {
		t.Errorf("a.bin: Repr-Digest %q", got)
	}
	resp := get(t, s.URL+"copied/?archive=zip", "Range", "bytes=100-")
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		t.Errorf("a range of the zip: %s; want 206", resp.Status)
	}
}
