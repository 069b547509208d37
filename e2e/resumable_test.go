//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"

	"largo/internal/poll"
)

// nodeScript returns the command that runs a script of e2e/node under
// Node, or skips (fails, under LARGO_TEST_STRICT=1) when Node or the
// packages are missing.
func nodeScript(t *testing.T, script string, args ...string) *exec.Cmd {
	t.Helper()
	node := need(t, "node")
	testenv.File(t, filepath.Join("node", "node_modules", "tus-js-client"), "e2e/node/node_modules")
	return exec.Command(node, append([]string{filepath.Join("node", script)}, args...)...)
}

// metric reads one sample of the server's metrics.
func metric(t testing.TB, s *server, name string) float64 {
	t.Helper()
	resp := s.metrics()
	// Read to the end and close, so the connection is reused: a test that
	// counts the server's descriptors may ask often.
	defer func() {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// tusOffset returns the offset the server reports for an upload, or -1 if
// it knows no such upload.
func tusOffset(t *testing.T, url string) int64 {
	t.Helper()
	return offsetAs(t, url, bearer...)
}

// TestTusJSClient uploads with tus-js-client under Node: the first client
// process is killed half-way, a second one resumes from the server's
// offset, and the stored file matches the source.
func TestTusJSClient(t *testing.T) {
	const size, chunk, stop = 96 << 20, 4 << 20, 50 << 20
	src := filepath.Join(t.TempDir(), "clip.bin")
	want := writeRandom(t, src, size, 21)
	dir := t.TempDir()
	s := startWriter(t, dir)
	args := []string{"--endpoint", s.URL + "_largo/uploads/", "--file", src, "--name", "videos/clip.bin",
		"--token", testToken, "--chunk", strconv.Itoa(chunk)}

	// First client: once the server holds 50 MiB it cuts its request in
	// flight and hangs; then it is killed.
	first, uploadURL, accepted := stoppedTusClient(t, append(args, "--stop-at", strconv.Itoa(stop)), stop)
	// The offset settles where the cut request left it.
	held, settled := poll.Steady(10*time.Second, 200*time.Millisecond, 2, func() int64 { return tusOffset(t, uploadURL) })
	if !settled || held < accepted || held >= size {
		t.Fatalf("server offset %d; the client saw %d accepted", held, accepted)
	}
	first.Process.Kill()
	first.Wait()
	absent(t, dir, "videos/clip.bin")
	if p := metric(t, s, "largo_upload_pending_bytes"); p != float64(held) {
		t.Errorf("pending bytes %v; want %d", p, held)
	}

	// Second client: a new process resumes the same upload.
	second := nodeScript(t, "tus-upload.mjs", append(args, "--url", uploadURL)...)
	b, err := second.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "done ") {
		t.Fatalf("second client: %v\n%s", err, tail(string(b), 2000))
	}
	firstChunk := regexp.MustCompile(`chunk (\d+) `).FindStringSubmatch(string(b))
	if firstChunk == nil {
		t.Fatal("second client reported no chunk")
	}
	if n, _ := strconv.ParseInt(firstChunk[1], 10, 64); n <= held {
		t.Errorf("second client's first chunk ended at %d; want a resume after %d", n, held)
	}
	if got := fileSHA(t, filepath.Join(dir, "videos", "clip.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if r := metric(t, s, "largo_bytes_received_total"); r > size+2*chunk {
		t.Errorf("server received %v bytes for a %d-byte upload: not resumed", r, size)
	}
	if p := metric(t, s, "largo_upload_pending_bytes"); p != 0 {
		t.Errorf("pending bytes %v after the upload", p)
	}
	// Finished uploads stay on record, whole, until they expire.
	if n := tusOffset(t, uploadURL); n != size {
		t.Errorf("finished upload's offset %d; want %d", n, size)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tus"))
	if len(ents) != 0 {
		t.Errorf("%d files left in .largo/tus", len(ents))
	}
}

// stoppedTusClient runs tus-upload.mjs with args, which include
// --stop-at, until the client stops with at least stop bytes accepted, and
// returns the client's process (killed when the test ends), the upload's
// URL and the bytes the client saw accepted.
func stoppedTusClient(t *testing.T, args []string, stop int64) (*exec.Cmd, string, int64) {
	t.Helper()
	client := nodeScript(t, "tus-upload.mjs", args...)
	out, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill(); client.Wait() })
	var uploadURL string
	var accepted int64
	sc := bufio.NewScanner(out)
	for accepted == 0 && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "url "):
			uploadURL = strings.TrimPrefix(line, "url ")
		case strings.HasPrefix(line, "stopped "):
			accepted, _ = strconv.ParseInt(strings.TrimPrefix(line, "stopped "), 10, 64)
		case strings.HasPrefix(line, "error "), strings.HasPrefix(line, "done "):
			t.Fatalf("first client: %s", line)
		}
	}
	if uploadURL == "" || accepted < stop {
		t.Fatalf("first client: url %q, stopped at %d", uploadURL, accepted)
	}
	return client, uploadURL, accepted
}

// tusCreate starts an upload with raw tus requests and returns its URL.
func tusCreate(t *testing.T, s *server, size int64, meta map[string]string, hdr ...string) (string, *http.Response) {
	t.Helper()
	var pairs []string
	for k, v := range meta {
		pairs = append(pairs, k+" "+base64.StdEncoding.EncodeToString([]byte(v)))
	}
	h := append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", strconv.FormatInt(size, 10), "Upload-Metadata", strings.Join(pairs, ",")}, hdr...)
	resp, _ := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, h...)
	return resp.Header.Get("Location"), resp
}

func tusPatch(t *testing.T, url string, offset int64, data []byte) *http.Response {
	t.Helper()
	resp, _ := send(t, "PATCH", url, strings.NewReader(string(data)), int64(len(data)), append([]string{"Tus-Resumable", "1.0.0",
		"Upload-Offset", strconv.FormatInt(offset, 10), "Content-Type", "application/offset+octet-stream"}, bearer...)...)
	return resp
}

// TestTusRules checks the rules largo adds to tus: auth, the path policy
// and the limits at creation, the digest at the end, and that an upload
// survives a kill -9 of the server and is swept by expiry.
func TestTusRules(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "exists.txt"), []byte("keep"), 0o644)
	s := startWriter(t, dir, "--max-upload", "10MiB", "--upload-expiry", "2s")
	for _, tt := range []struct {
		name string
		size int64
		meta map[string]string
		hdr  []string
		code int
	}{
		{"no token", 10, map[string]string{"filename": "a"}, nil, 401},
		{"wrong token", 10, map[string]string{"filename": "a"}, []string{"Authorization", "Bearer nope"}, 401},
		{"no filename", 10, map[string]string{}, bearer, 400},
		{"escape", 10, map[string]string{"filename": "../a"}, bearer, 400},
		{"dotfolder", 10, map[string]string{"filename": "a", "folder": ".git"}, bearer, 403},
		{"over the limit", 11 << 20, map[string]string{"filename": "a"}, bearer, 413},
		{"exists", 10, map[string]string{"filename": "exists.txt"}, append([]string{"If-None-Match", "*"}, bearer...), 412},
	} {
		if _, resp := tusCreate(t, s, tt.size, tt.meta, tt.hdr...); resp.StatusCode != tt.code {
			t.Errorf("%s: %d; want %d", tt.name, resp.StatusCode, tt.code)
		}
	}
	// A digest mismatch at the end: 400, nothing stored.
	url, _ := tusCreate(t, s, 5, map[string]string{"filename": "bad.txt", "sha256": sha("other")}, bearer...)
	if resp := tusPatch(t, url, 0, []byte("hello")); resp.StatusCode != 400 {
		t.Errorf("digest mismatch: %d", resp.StatusCode)
	}
	absent(t, dir, "bad.txt")

	// Half an upload, kill -9, restart: still resumable.
	data := make([]byte, 4<<20)
	rand.NewChaCha8([32]byte{7}).Read(data)
	sum := sha256.Sum256(data)
	url, resp := tusCreate(t, s, int64(len(data)), map[string]string{"filename": "resumed.bin", "sha256": hex.EncodeToString(sum[:])}, bearer...)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	tusPatch(t, url, 0, data[:1<<20])
	s.cmd.Process.Kill()
	s.wait(5 * time.Second)
	s = startWriter(t, dir, "--max-upload", "10MiB", "--upload-expiry", "1h")
	url = s.URL + strings.TrimPrefix(url[strings.Index(url, "_largo/"):], "/")
	if off := tusOffset(t, url); off != 1<<20 {
		t.Fatalf("after restart the offset is %d", off)
	}
	if resp := tusPatch(t, url, 1<<20, data[1<<20:]); resp.StatusCode != 204 {
		t.Fatalf("resume after restart: %d", resp.StatusCode)
	}
	if got := fileSHA(t, filepath.Join(dir, "resumed.bin")); got != hex.EncodeToString(sum[:]) {
		t.Fatal("resumed upload differs")
	}

	// Expiry: an abandoned upload is removed with its bytes.
	s = startWriter(t, dir, "--upload-expiry", "1s")
	url, _ = tusCreate(t, s, 1<<20, map[string]string{"filename": "abandoned.bin"}, bearer...)
	tusPatch(t, url, 0, data[:1000])
	if !waitFor(8*time.Second, func() bool { return tusOffset(t, url) == -1 }) {
		t.Fatal("abandoned upload not expired")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tus"))
	if len(ents) != 0 {
		t.Errorf("%d files left in .largo/tus after expiry", len(ents))
	}
}

// TestMultipart1GiB posts a browser-style form with several files, one of
// them 1 GiB, streamed: every file stored whole, no temporary file left.
// (What a form costs the server in memory is BenchmarkUpload's figure.)
func TestMultipart1GiB(t *testing.T) {
	dir := t.TempDir()
	s := startWriter(t, dir)

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sums := map[string]string{}
	go func() {
		mw.WriteField("comment", "holiday videos")
		for _, f := range []struct {
			name string
			size int64
		}{{"notes.txt", 1000}, {"film.mkv", 1 << 30}, {"poster.jpg", 300 << 10}} {
			fw, err := mw.CreateFormFile("files", f.name)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			h := sha256.New()
			r := rand.NewChaCha8([32]byte{byte(f.size)})
			if _, err := io.CopyN(io.MultiWriter(fw, h), r, f.size); err != nil {
				pw.CloseWithError(err)
				return
			}
			sums[f.name] = hex.EncodeToString(h.Sum(nil))
		}
		pw.CloseWithError(mw.Close())
	}()
	resp, body := send(t, "POST", s.URL+"media/", pr, -1, append([]string{"Content-Type", mw.FormDataContentType()}, bearer...)...)
	if resp.StatusCode != 201 {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	var stored []struct {
		Name, Path, SHA256 string
		Size               int64
	}
	if err := json.Unmarshal([]byte(body), &stored); err != nil || len(stored) != 3 {
		t.Fatalf("answer %s: %v", body, err)
	}
	for _, st := range stored {
		if st.SHA256 != sums[st.Name] || st.Path != "/media/"+st.Name {
			t.Errorf("%+v; sent sha %s", st, sums[st.Name])
		}
		if got := fileSHA(t, filepath.Join(dir, "media", st.Name)); got != sums[st.Name] {
			t.Errorf("%s stored with sha %s", st.Name, got)
		}
	}
	noTemp(t, dir)
}
