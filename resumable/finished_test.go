package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo"
)

// head asks for an upload's offset.
func (f *fixture) head(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, url, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestFinishedOnRecord: after the last PATCH, HEAD answers the whole
// offset and the placed file's ETag, and a repeated last PATCH (a client
// that missed the answer) is answered as done, not stored again; the
// record goes with the expiry.
func TestFinishedOnRecord(t *testing.T) {
	f := newFixture(t, Config{Expiry: time.Hour})
	url, _ := f.create(t, 5, map[string]string{"filename": "done.txt"})
	if r := f.patch(t, url, 0, "hello"); r.StatusCode != 204 {
		t.Fatalf("PATCH: %d", r.StatusCode)
	}
	in, err := f.h.cfg.Writes.Store().Stat(context.Background(), "done.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := f.head(t, url)
	if r.StatusCode != 200 || r.Header.Get("Upload-Offset") != "5" || r.Header.Get("Upload-Length") != "5" || r.Header.Get("ETag") != in.ETag {
		t.Fatalf("HEAD after completion: %d, offset %q, length %q, ETag %q (file %s)", r.StatusCode,
			r.Header.Get("Upload-Offset"), r.Header.Get("Upload-Length"), r.Header.Get("ETag"), in.ETag)
	}
	if r := f.patch(t, url, 5, ""); r.StatusCode != 204 || r.Header.Get("ETag") != in.ETag {
		t.Fatalf("last PATCH again: %d, ETag %q", r.StatusCode, r.Header.Get("ETag"))
	}
	if r := f.patch(t, url, 0, "hello"); r.StatusCode != 409 {
		t.Errorf("PATCH from 0 of a finished upload: %d; want 409", r.StatusCode)
	}
	if f.stateFiles(t) != 0 {
		t.Errorf("%d staging files left", f.stateFiles(t))
	}
	f.now = f.now.Add(2 * time.Hour)
	os.Chtimes(filepath.Join(f.dir, largo.StateDir, "tus-done", filepath.Base(url)), f.now.Add(-3*time.Hour), f.now.Add(-3*time.Hour))
	f.h.Expire()
	if r := f.head(t, url); r.StatusCode != 404 {
		t.Errorf("HEAD after the expiry: %d; want 404", r.StatusCode)
	}
}

// TestCrashWindow: the last bytes are staged but the server died before
// placing them. After a restart, HEAD and PATCH must not claim success
// before the file is in place.
func TestCrashWindow(t *testing.T) {
	for _, method := range []string{http.MethodHead, http.MethodPatch} {
		t.Run(method, func(t *testing.T) {
			f := newFixture(t, Config{})
			data := strings.Repeat("crash ", 1000)
			sum := sha256.Sum256([]byte(data))
			url, _ := f.create(t, int64(len(data)), map[string]string{"filename": "crash.txt", "sha256": hex.EncodeToString(sum[:])})
			id := filepath.Base(url)
			// The bytes reach the staging, the process dies before it
			// places them.
			up, err := f.h.cfg.Staging.GetUpload(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := up.WriteChunk(context.Background(), 0, strings.NewReader(data)); err != nil || n != int64(len(data)) {
				t.Fatalf("WriteChunk = %d, %v", n, err)
			}
			f.srv.Close()
			f.start(t, Config{Writes: f.h.cfg.Writes, BasePath: f.h.cfg.BasePath})
			url = f.srv.URL + "/_largo/uploads/" + id
			var r *http.Response
			if method == http.MethodHead {
				r = f.head(t, url)
			} else {
				r = f.patch(t, url, int64(len(data)), "")
			}
			if r.StatusCode/100 != 2 || r.Header.Get("Upload-Offset") != fmt.Sprint(len(data)) || r.Header.Get("ETag") == "" {
				t.Fatalf("%s: %d, offset %q, ETag %q", method, r.StatusCode, r.Header.Get("Upload-Offset"), r.Header.Get("ETag"))
			}
			b, err := os.ReadFile(filepath.Join(f.dir, "crash.txt"))
			if err != nil || string(b) != data {
				t.Fatalf("the file was not placed before the answer: %v", err)
			}
		})
	}
}
