//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/s3/s3test"
)

// TestS3MislabelledObjects serves objects whose store type is not what
// their bytes are to a client that accepts gzip: versitygw calls a file
// placed in its folder behind its back text/plain, and an uploader may
// give any type. Binary bytes go as they are, whatever the label; text
// under a text label is still compressed; every body arrives intact.
func TestS3MislabelledObjects(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	dir := t.TempDir()
	random := filepath.Join(dir, "random")
	writeRandom(t, random, 256<<10, 7)
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte(strings.Repeat("a line of text, again and again\n", 8192)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Place(t, "placed.zip", random) // versitygw: text/plain
	srv.Place(t, "placed.bin", random)
	srv.Place(t, "notes.log", text) // text/plain, and text
	f, err := os.Open(random)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv.PutReader(t, srv.Bucket, "labelled.json", f, 256<<10, "application/json")
	s := startS3Largo(t, srv, "")

	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tt := range []struct {
		name, src, encoding string
	}{
		{"placed.zip", random, ""},
		{"placed.bin", random, ""},
		{"labelled.json", random, ""},
		{"notes.log", text, "gzip"},
	} {
		for _, method := range []string{"HEAD", "GET"} {
			req, _ := http.NewRequest(method, s.URL+tt.name, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s %s: %v", method, tt.name, err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: %s", method, tt.name, resp.Status)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tt.encoding {
				t.Errorf("%s %s (%s): Content-Encoding %q; want %q", method, tt.name, resp.Header.Get("Content-Type"), got, tt.encoding)
			}
			if method == "HEAD" {
				continue
			}
			if tt.encoding == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("GET %s: %v", tt.name, err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatalf("GET %s: %v", tt.name, err)
				}
			}
			want, err := os.ReadFile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("GET %s: %d bytes, not the object's %d", tt.name, len(body), len(want))
			}
		}
	}
}
