// Package s3test runs a real S3-compatible server for tests: versitygw,
// over a temporary folder, on a free loopback port, with random root
// credentials. A test calls Start, gets a Server with an empty bucket, and
// the server is stopped when the test ends.
//
// versitygw is found on PATH or in the Go binary folder, where
// scripts/test-deps installs it. When it is missing the test is skipped with
// a loud message, or failed under LARGO_TEST_STRICT=1.
//
// With LARGO_TEST_S3_ENDPOINT set (and LARGO_TEST_S3_ACCESS_KEY,
// LARGO_TEST_S3_SECRET_KEY, optionally LARGO_TEST_S3_REGION and
// LARGO_TEST_S3_ENGINE naming it), Start runs no server: it makes a
// bucket of the test's own on that one, another engine (`make
// test-engines` runs SeaweedFS so). The tests that need versitygw's
// folder or process (Place, PlaceSparse, Options.NoKeepAlive, NeedLocal)
// are skipped there.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo/internal/testenv"
	"largo/internal/versitygw"
)

// Program is the name of the server binary.
const Program = versitygw.Program

// Options changes how the server runs. The zero value is a server that
// keeps connections alive, as production S3 services do.
type Options struct {
	// NoKeepAlive makes the server close every connection after one
	// response (versitygw's own default), so that a connection still open
	// afterwards can only be one a client failed to close.
	NoKeepAlive bool
}

// Server is a running versitygw process with one bucket (see package
// versitygw for its fields), with helpers for tests.
type Server struct {
	*versitygw.Server
}

// Find returns the path of versitygw, or "" when it is not installed.
func Find() string { return versitygw.Find() }

// Start starts a server with opt and an empty bucket, and stops it when
// the test ends. It skips the test (fails it, under LARGO_TEST_STRICT=1)
// when versitygw is not installed.
func Start(t testing.TB, opt Options) *Server {
	t.Helper()
	if endpoint := os.Getenv(EndpointVar); endpoint != "" {
		if opt.NoKeepAlive {
			t.Skipf("not on %s: the test needs a server that closes every connection after one response", EngineName())
		}
		vs, err := versitygw.Attach(endpoint, os.Getenv("LARGO_TEST_S3_ACCESS_KEY"), os.Getenv("LARGO_TEST_S3_SECRET_KEY"), os.Getenv("LARGO_TEST_S3_REGION"))
		if err != nil {
			t.Fatalf("%s=%s: %v", EndpointVar, endpoint, err)
		}
		return &Server{vs}
	}
	bin := Find()
	if bin == "" {
		testenv.Missing(t, "%s not found: install it (make test does, through scripts/test-deps) to run this test", Program)
	}
	var err error
	for range 3 { // the free port may be taken between finding and binding it
		var vs *versitygw.Server
		vs, err = versitygw.Start(bin, t.TempDir(), filepath.Join(t.TempDir(), Program+".log"), !opt.NoKeepAlive)
		if err == nil {
			s := &Server{vs}
			t.Cleanup(func() {
				s.Stop()
				if t.Failed() {
					out := s.Output()
					t.Logf("%s output (last 4 KiB):\n%s", Program, out[max(0, len(out)-4096):])
				}
			})
			return s
		}
	}
	t.Fatalf("starting %s: %v", Program, err)
	return nil
}

// EndpointVar is the environment variable that points the tests at an S3
// server already running instead of a versitygw of their own.
const EndpointVar = "LARGO_TEST_S3_ENDPOINT"

// EngineName names the S3 server the tests run against: versitygw, or what
// LARGO_TEST_S3_ENGINE says of the one at LARGO_TEST_S3_ENDPOINT.
func EngineName() string {
	if os.Getenv(EndpointVar) == "" {
		return Program
	}
	if e := os.Getenv("LARGO_TEST_S3_ENGINE"); e != "" {
		return e
	}
	return "the S3 server at " + os.Getenv(EndpointVar)
}

// NeedLocal skips t unless the server is a versitygw of the test's own,
// whose folder (Dir) and process (PID) the test reaches into.
func (s *Server) NeedLocal(t testing.TB) {
	t.Helper()
	if !s.Local() {
		t.Skipf("not on %s: the test reaches into versitygw's folder or process", EngineName())
	}
}

// Put stores content at key in the bucket.
func (s *Server) Put(t testing.TB, key string, content []byte) {
	t.Helper()
	s.PutTo(t, s.Bucket, key, content)
}

// PutTo stores content at key in bucket.
func (s *Server) PutTo(t testing.TB, bucket, key string, content []byte) {
	t.Helper()
	s.PutReader(t, bucket, key, bytes.NewReader(content), int64(len(content)), "")
}

// PutAll stores files (names mapped to contents) in bucket, each at
// prefix+name, a few at a time.
func (s *Server) PutAll(t testing.TB, bucket, prefix string, files map[string]string) {
	t.Helper()
	type job struct{ key, content string }
	jobs := make(chan job)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := s.put(bucket, j.key, strings.NewReader(j.content), int64(len(j.content)), "")
				if err != nil {
					select {
					case errs <- fmt.Errorf("PutObject %s/%s: %v", bucket, j.key, err):
					default:
					}
				}
			}
		}()
	}
	for name, content := range files {
		jobs <- job{prefix + name, content}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// PutReader stores size bytes of r, an io.ReadSeeker, at key in bucket,
// with a Content-Type unless contentType is "".
func (s *Server) PutReader(t testing.TB, bucket, key string, r io.ReadSeeker, size int64, contentType string) {
	t.Helper()
	if err := s.put(bucket, key, r, size, contentType); err != nil {
		t.Fatal(err)
	}
}

// put is one PUT of size bytes of r (seekable, so that the payload is
// signed) at key in bucket.
func (s *Server) put(bucket, key string, r io.ReadSeeker, size int64, contentType string) error {
	in := &awss3.PutObjectInput{Bucket: &bucket, Key: &key, Body: r, ContentLength: aws.Int64(size)}
	if contentType != "" {
		in.ContentType = &contentType
	}
	if _, err := s.Client.PutObject(context.Background(), in); err != nil {
		return fmt.Errorf("PutObject %s/%s: %v", bucket, key, err)
	}
	return nil
}

// PutFile stores the file at path (at most 5 GiB) at key in the bucket.
func (s *Server) PutFile(t testing.TB, key, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	s.PutReader(t, s.Bucket, key, f, fi.Size(), "")
}

// Get returns the object at key in bucket, and false when there is none
// or it cannot be read.
func (s *Server) Get(t testing.TB, bucket, key string) ([]byte, bool) {
	t.Helper()
	out, err := s.Client.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, false
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, err == nil
}

// Keys returns the keys under prefix in bucket, in order.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := awss3.NewListObjectsV2Paginator(s.Client, &awss3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("listing %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// Uploads returns the keys of the multipart uploads in progress under
// prefix in bucket, in order.
func (s *Server) Uploads(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := awss3.NewListMultipartUploadsPaginator(s.Client, &awss3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("listing the multipart uploads of %s/%s: %v", bucket, prefix, err)
		}
		for _, u := range page.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
	}
	slices.Sort(keys)
	return keys
}

// PlaceSparse makes an object of size bytes at key without sending them:
// a sparse file written straight into the server's folder, with tail as
// its last bytes, and a random ETag set the way versitygw keeps it (a
// "user.etag" extended attribute), since it computes none for files it did
// not receive. It returns the file's path.
func (s *Server) PlaceSparse(t testing.TB, key string, size int64, tail []byte) string {
	t.Helper()
	s.NeedLocal(t)
	p := filepath.Join(s.Dir, s.Bucket, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tail, size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	setETag(t, p)
	return p
}

// Place makes the file at path an object at key without sending it: a hard
// link to it in the server's folder, with an ETag as PlaceSparse sets. path
// must be on the same file system as Dir (both under the temporary
// folder, say) and must not change while the server serves it.
func (s *Server) Place(t testing.TB, key, path string) {
	t.Helper()
	s.NeedLocal(t)
	p := filepath.Join(s.Dir, s.Bucket, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, p); err != nil {
		t.Fatal(err)
	}
	setETag(t, p)
}

// setETag gives the file at p a random ETag, where versitygw keeps it.
func setETag(t testing.TB, p string) {
	t.Helper()
	if err := syscall.Setxattr(p, "user.etag", []byte("placed-"+randomHex(8)), 0); err != nil {
		t.Fatalf("setting the ETag of %s: %v", p, err)
	}
}

// MakeBucket creates another empty bucket and returns its name.
func (s *Server) MakeBucket(t testing.TB) string {
	t.Helper()
	name := "largo-" + randomHex(6)
	if _, err := s.Client.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("MakeBucket %s: %v", name, err)
	}
	return name
}

// Unreachable returns the URL of a loopback port where nothing listens,
// for testing what a client does when the store does not answer.
func Unreachable(t testing.TB) string {
	t.Helper()
	addr, err := versitygw.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
