package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

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

// awsIDs gives the uploads of a staging IDs of the shape tusd's S3 store
// makes on Amazon S3: the staging's own ID, a plus, and a long multipart
// upload ID with dots, underscores and tildes.
type awsIDs struct{ Staging }

var awsSuffix = "+" + awsLikeUploadID

func inner(id string) string { s, _ := strings.CutSuffix(id, awsSuffix); return s }

type awsUpload struct{ tusd.Upload }

func (u awsUpload) GetInfo(ctx context.Context) (tusd.FileInfo, error) {
	info, err := u.Upload.GetInfo(ctx)
	info.ID += awsSuffix
	return info, err
}

func (a awsIDs) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	u, err := a.Staging.NewUpload(ctx, info)
	return awsUpload{u}, err
}

func (a awsIDs) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	in, ok := strings.CutSuffix(id, awsSuffix)
	if !ok {
		return nil, tusd.ErrNotFound
	}
	u, err := a.Staging.GetUpload(ctx, in)
	if err != nil {
		return nil, err
	}
	return awsUpload{u}, nil
}

func (a awsIDs) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return a.Staging.AsTerminatableUpload(u.(awsUpload).Upload)
}

func (a awsIDs) AsLengthDeclarableUpload(u tusd.Upload) tusd.LengthDeclarableUpload {
	return a.Staging.AsLengthDeclarableUpload(u.(awsUpload).Upload)
}

func (a awsIDs) Staged(id string) string { return a.Staging.Staged(inner(id)) }
func (a awsIDs) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	return a.Staging.Open(ctx, inner(id))
}
func (a awsIDs) Remove(ctx context.Context, id string) error { return a.Staging.Remove(ctx, inner(id)) }
func (a awsIDs) LoadHash(ctx context.Context, id string) []byte {
	return a.Staging.LoadHash(ctx, inner(id))
}
func (a awsIDs) SaveHash(ctx context.Context, id string, state []byte) error {
	return a.Staging.SaveHash(ctx, inner(id), state)
}

// TestAWSShapedIDs runs a whole upload whose ID has the shape Amazon S3's
// multipart upload IDs give it: creation, two PATCHes, HEAD between and
// after, the file in place.
func TestAWSShapedIDs(t *testing.T) {
	f := newFixture(t, Config{})
	st, err := StagingFor(f.h.cfg.Writes.Store())
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	f.start(t, Config{Writes: f.h.cfg.Writes, BasePath: f.h.cfg.BasePath, Staging: awsIDs{st}})
	data := strings.Repeat("aws ", 4096)
	url, resp := f.create(t, int64(len(data)), map[string]string{"filename": "aws.txt"})
	if resp.StatusCode != 201 || !strings.HasSuffix(url, awsSuffix) {
		t.Fatalf("create: %d, %s", resp.StatusCode, url)
	}
	if r := f.patch(t, url, 0, data[:1000]); r.StatusCode != 204 {
		t.Fatalf("first PATCH: %d", r.StatusCode)
	}
	if r := f.head(t, url); r.StatusCode != 200 || r.Header.Get("Upload-Offset") != "1000" {
		t.Fatalf("HEAD: %d, offset %q", r.StatusCode, r.Header.Get("Upload-Offset"))
	}
	if r := f.patch(t, url, 1000, data[1000:]); r.StatusCode != 204 || r.Header.Get("ETag") == "" {
		t.Fatalf("last PATCH: %d", r.StatusCode)
	}
	if r := f.head(t, url); r.StatusCode != 200 || r.Header.Get("Upload-Offset") != fmt.Sprint(len(data)) {
		t.Fatalf("HEAD after completion: %d, offset %q", r.StatusCode, r.Header.Get("Upload-Offset"))
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "aws.txt")); err != nil || string(b) != data {
		t.Fatalf("aws.txt: %v", err)
	}
}
