//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo/encode"
	"largo/s3/s3test"
)

// TestPrecompressBucket runs `largo precompress --store s3://...` on a
// bucket: the sidecars are objects beside the files that decode to them,
// each recorded in the state area, the bucket holds nothing else new (no
// temporary object, no upload in progress), a second run finds them fresh, and `largo serve --store`
// sends them with Content-Encoding.
func TestPrecompressBucket(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	dir := t.TempDir()
	logPath := filepath.Join(dir, "app.log")
	logSHA := writeLog(t, logPath, 256<<10)
	tarPath := filepath.Join(dir, "backup.tar.gz")
	writeRandom(t, tarPath, 64<<10, 11)
	srv.PutFile(t, "site/app.log", logPath)
	srv.PutFile(t, "site/logs/old.log", logPath)
	srv.PutFile(t, "site/backup.tar.gz", tarPath)
	srv.PutFile(t, "site/.hidden.log", logPath)
	srv.PutFile(t, "outside.log", logPath)
	store := "s3://" + srv.Bucket + "/site"

	code, out, stderr := runLargo(t, srv.Env(), "precompress", "--store", store, "--progress", "lines")
	if code != 0 || !strings.Contains(out, "2 compressed") || !strings.Contains(out, "6 sidecars written") || !strings.Contains(stderr, "wrote    logs/old.log.br") {
		t.Fatalf("precompress: exit %d\n%s\n%s", code, out, stderr)
	}

	var keys []string
	for _, k := range srv.Keys(t, srv.Bucket, "") {
		if !strings.HasPrefix(k, "site/.largo/") {
			keys = append(keys, k)
		}
	}
	// Each sidecar's record, in the store's state area, says its source
	// and holds its SHA-256; each original's names its sidecars.
	records, digests, named := 0, 0, 0
	for _, rec := range fileRecords(t, filepath.Join(srv.Dir, srv.Bucket, "site")) {
		if rec.Source != "" {
			records++
		}
		if rec.Source != "" && rec.SHA256 != "" {
			digests++
		}
		named += len(rec.Sidecars)
	}
	if records != 6 || digests != 6 || named != 6 {
		t.Errorf("%d sidecar records, %d with a digest, %d named by their originals; want 6 of each", records, digests, named)
	}
	want := []string{"outside.log", "site/.hidden.log", "site/app.log", "site/app.log.br", "site/app.log.gz", "site/app.log.zst",
		"site/backup.tar.gz", "site/logs/old.log", "site/logs/old.log.br", "site/logs/old.log.gz", "site/logs/old.log.zst"}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("objects after precompress:\n%v\nwant\n%v", keys, want)
	}
	for _, up := range srv.Uploads(t, srv.Bucket, "") {
		t.Errorf("upload left in progress: %s", up)
	}
	for _, c := range encode.Codings {
		for _, name := range []string{"site/app.log", "site/logs/old.log"} {
			obj, ok := srv.Get(t, srv.Bucket, encode.Sidecar(name, c))
			if !ok {
				t.Fatalf("no %s", encode.Sidecar(name, c))
			}
			if sha, _ := decodedSHA(t, bytes.NewReader(obj), string(c)); sha != logSHA {
				t.Errorf("%s does not decode to the original", encode.Sidecar(name, c))
			}
		}
	}

	if code, out, _ := runLargo(t, srv.Env(), "precompress", "--store", store); code != 0 || !strings.Contains(out, "2 up to date") {
		t.Errorf("second precompress: exit %d\n%s", code, out)
	}

	// Dynamic compression off: only the sidecars can be compressed.
	s := startS3Largo(t, srv, "site", "--compress", "off")
	for _, c := range encode.Codings {
		side, _ := srv.Get(t, srv.Bucket, encode.Sidecar("site/app.log", c))
		resp := get(t, s.URL+"app.log", "Accept-Encoding", string(c))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != string(c) || resp.ContentLength != int64(len(side)) {
			t.Fatalf("app.log for %s: %d, Content-Length %d (sidecar %d), %v", c, resp.StatusCode, resp.ContentLength, len(side), resp.Header)
		}
		if sha, _ := decodedSHA(t, resp.Body, string(c)); sha != logSHA {
			t.Errorf("app.log served as %s does not decode to the original", c)
		}
	}
	if resp := get(t, s.URL+"app.log"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("app.log without Accept-Encoding: %v", resp.Header)
	}
}

// TestUploadedFileWithSidecarName uploads data.csv, then a data.csv.gz of
// its own: a gzip client asking for data.csv gets data.csv's bytes, the
// listing shows data.csv.gz, and largo precompress leaves it alone while
// it writes data.csv's other sidecars, which are then served. With
// --sidecars any, the server takes the hand-made file for the sidecar, as
// nginx's gzip_static would.
func TestUploadedFileWithSidecarName(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(t.TempDir(), "data.csv")
	csvSHA := writeLog(t, csvPath, 64<<10)
	csv, _ := os.ReadFile(csvPath)
	var own bytes.Buffer
	zw := gzip.NewWriter(&own)
	zw.Write(bytes.Repeat([]byte("another table, not data.csv\n"), 2000))
	zw.Close()

	s := startServer(t, dir, "--compress", "off", "--upload", "--token", testToken)
	for _, f := range []struct {
		name string
		body []byte
	}{{"data.csv", csv}, {"data.csv.gz", own.Bytes()}} {
		if resp, b := send(t, "PUT", s.URL+f.name, bytes.NewReader(f.body), int64(len(f.body)), bearer...); resp.StatusCode != 201 {
			t.Fatalf("PUT %s: %d %s", f.name, resp.StatusCode, b)
		}
	}
	served := func(s *server, coding string) (string, string) {
		resp := get(t, s.URL+"data.csv", "Accept-Encoding", coding)
		enc := resp.Header.Get("Content-Encoding")
		if enc == "" {
			sha, _ := bodySHA(t, resp.Body)
			return sha, enc
		}
		sha, _ := decodedSHA(t, resp.Body, enc)
		return sha, enc
	}
	if sha, enc := served(s, "gzip"); sha != csvSHA || enc != "" {
		t.Errorf("data.csv for gzip: encoding %q, sha %s; want data.csv's own bytes", enc, sha)
	}
	listing := func() string {
		b, _ := io.ReadAll(get(t, s.URL+"?format=json").Body)
		return string(b)
	}
	if l := listing(); !strings.Contains(l, `"data.csv.gz"`) {
		t.Errorf("the listing hides data.csv.gz:\n%s", l)
	}

	code, out, stderr := runLargo(t, nil, "precompress", dir, "--progress", "lines")
	if code != 0 || !strings.Contains(out, "2 sidecars written") || !strings.Contains(stderr, "left     data.csv.gz") {
		t.Fatalf("precompress: exit %d\n%s\n%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data.csv.gz")); !bytes.Equal(b, own.Bytes()) {
		t.Error("precompress wrote over the uploaded data.csv.gz")
	}
	if sha, enc := served(s, "br"); sha != csvSHA || enc != "br" {
		t.Errorf("data.csv for br after precompress: encoding %q, sha %s", enc, sha)
	}
	if sha, enc := served(s, "gzip"); sha != csvSHA || enc != "" {
		t.Errorf("data.csv for gzip after precompress: encoding %q, sha %s", enc, sha)
	}
	if l := listing(); !strings.Contains(l, `"data.csv.gz"`) || strings.Contains(l, `"data.csv.br"`) {
		t.Errorf("the listing after precompress:\n%s", l)
	}

	// Told to take any fresh file for a sidecar, the server sends the
	// uploaded data.csv.gz as data.csv's encoding.
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "data.csv.gz"), later, later)
	anyServer := startServer(t, dir, "--compress", "off", "--sidecars", "any")
	if sha, enc := served(anyServer, "gzip"); sha == csvSHA || enc != "gzip" {
		t.Errorf("--sidecars any: encoding %q, sha %s; want the uploaded .gz", enc, sha)
	}
}
