package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/ingest"
	"largo/s3"
	"largo/s3/s3test"
)

// s3Fixture is two servers (Handlers on their own Store and Staging, as
// two instances) over one bucket of a real S3 server.
type s3Fixture struct {
	srv      *s3test.Server
	endpoint string // where the instances reach srv
	partSize int64
	a, b     *fixture
}

func newS3Fixture(t *testing.T, cfg Config) *s3Fixture {
	t.Helper()
	return newS3FixtureOn(t, cfg, s3test.Quirks{}, s3.MinPartSize)
}

// newS3FixtureOn is newS3Fixture with instances that reach the server
// through a proxy with quirks q, and write parts of partSize.
func newS3FixtureOn(t *testing.T, cfg Config, q s3test.Quirks, partSize int64) *s3Fixture {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	srv.Put(t, "site/exists.txt", []byte("old"))
	f := &s3Fixture{srv: srv, endpoint: srv.Endpoint, partSize: partSize}
	if q != (s3test.Quirks{}) {
		f.endpoint = srv.QuirkProxy(t, q).URL
	}
	f.a, f.b = f.instance(t, cfg), f.instance(t, cfg)
	return f
}

func (f *s3Fixture) instance(t *testing.T, cfg Config) *fixture {
	t.Helper()
	srv := f.srv
	store, err := s3.New(context.Background(), s3.Config{Bucket: srv.Bucket, Prefix: "site", Endpoint: f.endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PartSize: f.partSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sh := store.Shared()
	st, err := S3Staging(S3Config{
		Client: sh.Client, Bucket: sh.Bucket, Prefix: sh.Prefix + largo.StateDir + "/tus", Staged: largo.StateDir + "/tus",
		PartSize: sh.PartSize, PartConcurrency: sh.PartConcurrency, TempDir: t.TempDir(), Assembler: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	x := &fixture{obs: &observer{}, now: time.Now()}
	cfg.Writes, cfg.Staging, cfg.BasePath = ingest.New(ingest.Config{Store: store}), st, "/_largo/uploads/"
	x.start(t, cfg)
	return x
}

// on returns url (an upload's, from either instance) on instance x.
func on(x *fixture, url string) string {
	_, path, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	return x.srv.URL + "/" + path
}

// keys lists the bucket's keys under prefix, and its multipart uploads.
func (f *s3Fixture) keys(t *testing.T, prefix string) (keys []string, uploads int) {
	t.Helper()
	return f.srv.Keys(t, f.srv.Bucket, prefix), len(f.srv.Uploads(t, f.srv.Bucket, prefix))
}

// object returns the object at key, or "" when there is none.
func (f *s3Fixture) object(t *testing.T, key string) string {
	t.Helper()
	b, _ := f.srv.Get(t, f.srv.Bucket, key)
	return string(b)
}

// TestS3AcrossInstances begins an upload through one instance and goes
// on through the other, chunk by chunk, some shorter than a part: the
// state lives in the bucket. The finished upload is copied into place and
// nothing of its state is left.
func TestS3AcrossInstances(t *testing.T) {
	f := newS3Fixture(t, Config{})
	data := strings.Repeat("0123456789abcdef", 1<<20) + "tail" // 16 MiB and a bit
	sum := sha256.Sum256([]byte(data))
	url, resp := f.a.create(t, int64(len(data)), map[string]string{"filename": "v/clip.bin", "sha256": hex.EncodeToString(sum[:])})
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	cuts := []int{0, 3 << 20, 9 << 20, 15 << 20, len(data)}
	for i := range len(cuts) - 1 {
		x := []*fixture{f.a, f.b}[i%2]
		r := x.patch(t, on(x, url), int64(cuts[i]), data[cuts[i]:cuts[i+1]])
		if want := fmt.Sprint(cuts[i+1]); r.StatusCode != 204 || r.Header.Get("Upload-Offset") != want {
			t.Fatalf("PATCH %d through instance %d: %d, offset %s; want %s", i, i%2, r.StatusCode, r.Header.Get("Upload-Offset"), want)
		}
		if i < len(cuts)-2 {
			if keys, _ := f.keys(t, "site/v/"); len(keys) != 0 {
				t.Fatalf("target visible before the end: %v", keys)
			}
		} else if r.Header.Get("ETag") == "" || r.Header.Get("Content-Location") != "/v/clip.bin" {
			t.Fatalf("last PATCH: %v", r.Header)
		}
	}
	if got := f.object(t, "site/v/clip.bin"); got != data {
		t.Fatalf("stored %d bytes; want %d", len(got), len(data))
	}
	// Of the upload, only its record is left, for HEAD until it expires,
	// and either instance answers HEAD from it.
	if keys, uploads := f.keys(t, "site/"+largo.StateDir+"/tus/"); len(keys) != 0 || uploads != 0 {
		t.Errorf("state left: %v, %d multipart uploads", keys, uploads)
	}
	if keys, _ := f.keys(t, "site/"+largo.StateDir+"/tus-done/"); len(keys) != 1 {
		t.Errorf("records of finished uploads: %v", keys)
	}
	for _, x := range []*fixture{f.a, f.b} {
		if r := x.head(t, on(x, url)); r.StatusCode != 200 || r.Header.Get("Upload-Offset") != fmt.Sprint(len(data)) || r.Header.Get("ETag") == "" {
			t.Errorf("HEAD of the finished upload: %d, offset %q", r.StatusCode, r.Header.Get("Upload-Offset"))
		}
	}
	if f.a.obs.pending+f.b.obs.pending != 0 {
		t.Errorf("pending bytes across instances: %d", f.a.obs.pending+f.b.obs.pending)
	}
}

// TestS3FinishChecks: a digest that does not match, and a condition that
// fails at the end, store nothing and leave no state.
func TestS3FinishChecks(t *testing.T) {
	f := newS3Fixture(t, Config{})
	url, _ := f.a.create(t, 5, map[string]string{"filename": "d.txt", "sha256": base64.StdEncoding.EncodeToString(make([]byte, 32))})
	if r := f.b.patch(t, on(f.b, url), 0, "hello"); r.StatusCode != 400 || r.Header.Get("Repr-Digest") == "" {
		t.Fatalf("digest mismatch: %d %v", r.StatusCode, r.Header)
	}
	url, _ = f.a.create(t, 3, map[string]string{"filename": "race.txt"}, "If-None-Match", "*")
	f.srv.Put(t, "site/race.txt", []byte("first"))
	if r := f.a.patch(t, url, 0, "new"); r.StatusCode != 412 {
		t.Fatalf("condition at the end: %d", r.StatusCode)
	}
	if got := f.object(t, "site/race.txt"); got != "first" {
		t.Fatalf("target overwritten: %q", got)
	}
	keys, uploads := f.keys(t, "site/")
	if strings.Join(keys, ",") != "site/exists.txt,site/race.txt" || uploads != 0 {
		t.Errorf("keys %v, %d multipart uploads", keys, uploads)
	}
}

// TestS3Expiry: an abandoned upload, with parts and a short tail, is
// removed by either instance once idle for the expiry, and its multipart
// upload aborted; a terminated one is gone at once.
func TestS3Expiry(t *testing.T) {
	f := newS3Fixture(t, Config{Expiry: time.Hour})
	old, _ := f.a.create(t, 100<<20, map[string]string{"filename": "old"})
	f.a.patch(t, old, 0, strings.Repeat("x", 7<<20))
	gone, _ := f.a.create(t, 100, map[string]string{"filename": "gone"})
	f.a.patch(t, gone, 0, "abc")
	req, _ := http.NewRequest("DELETE", on(f.b, gone), nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("terminate through the other instance: %v %v", resp, err)
	}
	if n, _, err := f.b.h.Expire(); n != 0 || err != nil {
		t.Fatalf("expired %d fresh uploads (%v)", n, err)
	}
	f.b.now = f.b.now.Add(2 * time.Hour)
	if n, freed, err := f.b.h.Expire(); n != 1 || freed != 7<<20 || err != nil {
		t.Fatalf("Expire = %d, %d, %v; want 1 upload of 7 MiB", n, freed, err)
	}
	if keys, uploads := f.keys(t, "site/"+largo.StateDir); len(keys) != 0 || uploads != 0 {
		t.Errorf("state left: %v, %d multipart uploads", keys, uploads)
	}
	req, _ = http.NewRequest("HEAD", old, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 404 {
		t.Errorf("HEAD of an expired upload: %d", resp.StatusCode)
	}
}
