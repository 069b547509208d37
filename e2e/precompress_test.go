//go:build e2e

package e2e

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo/encode"
	"largo/s3/s3test"
)

// TestPrecompressBucket runs `largo precompress --store s3://...` on a
// bucket: the sidecars are objects beside the files that decode to them,
// the bucket holds nothing else new (no temporary object, no upload in
// progress), a second run finds them fresh, and `largo serve --store`
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

	keys := srv.Keys(t, srv.Bucket, "")
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
