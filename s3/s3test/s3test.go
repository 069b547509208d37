// Package s3test runs a real S3-compatible server for tests: versitygw,
// over a temporary folder, on a free loopback port, with random root
// credentials. A test calls Start, gets a Server with an empty bucket, and
// the server is stopped when the test ends.
//
// versitygw is found on PATH or in the Go binary folder, where
// scripts/test-deps installs it. When it is missing the test is skipped with
// a loud message, or failed under LARGO_TEST_STRICT=1.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo/internal/testenv"
)

// Program is the name of the server binary.
const Program = "versitygw"

// Options changes how the server runs. The zero value is a server that
// keeps connections alive, as production S3 services do.
type Options struct {
	// NoKeepAlive makes the server close every connection after one
	// response (versitygw's own default), so that a connection still open
	// afterwards can only be one a client failed to close.
	NoKeepAlive bool
}

// Server is a running versitygw process with one bucket.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string
	// Addr is the server's host:port.
	Addr string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Region is the region the server answers for.
	Region string
	// Bucket is an empty bucket created at start.
	Bucket string
	// Dir is the posix folder the server keeps buckets in: the objects of
	// Bucket are the files under Dir/Bucket.
	Dir string
	// PID is the server's process ID.
	PID int
	// Client is a client with the root credentials, for setting up test
	// data and looking at what a test left.
	Client *awss3.Client

	cmd  *exec.Cmd
	log  string // the server's output
	done chan struct{}
}

// Find returns the path of versitygw, or "" when it is not installed.
func Find() string {
	if p, err := exec.LookPath(Program); err == nil {
		return p
	}
	dirs := []string{os.Getenv("GOBIN")}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(gp)[0], "bin"))
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) == 2 {
			dirs = append(dirs, lines[0], filepath.Join(filepath.SplitList(lines[1])[0], "bin"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, Program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Start starts a server with opt and an empty bucket, and stops it when
// the test ends. It skips the test (fails it, under LARGO_TEST_STRICT=1)
// when versitygw is not installed.
func Start(t testing.TB, opt Options) *Server {
	t.Helper()
	bin := Find()
	if bin == "" {
		testenv.Missing(t, "%s not found: install it (make test does, through scripts/test-deps) to run this test", Program)
	}
	var err error
	for range 3 { // the free port may be taken between finding and binding it
		var s *Server
		if s, err = start(t, bin, opt); err == nil {
			return s
		}
	}
	t.Fatalf("starting %s: %v", Program, err)
	return nil
}

func start(t testing.TB, bin string, opt Options) (*Server, error) {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint:  "http://" + addr,
		Addr:      addr,
		AccessKey: "largo" + randomHex(8),
		SecretKey: randomHex(20),
		Region:    "us-east-1",
		Bucket:    "largo-test",
		Dir:       t.TempDir(),
		done:      make(chan struct{}),
	}
	s.log = filepath.Join(t.TempDir(), Program+".log")
	out, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	args := []string{"--port", addr, "--quiet", "--region", s.Region}
	if !opt.NoKeepAlive {
		args = append(args, "--keep-alive")
	}
	args = append(args, "posix", s.Dir)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	stop := func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	creds := aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, Source: "s3test"}
	s.Client = awss3.New(awss3.Options{
		Region:                     s.Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		Retryer:                    aws.NopRetryer{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	// Wait until it answers, then make the bucket.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, err = s.Client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &s.Bucket})
		if err == nil {
			break
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited: %s", Program, s.Output())
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("%s did not answer in 20s: %v\n%s", Program, err, s.Output())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			out := s.Output()
			t.Logf("%s output (last 4 KiB):\n%s", Program, out[max(0, len(out)-4096):])
		}
	})
	return s, nil
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

// Env returns the standard AWS variables that point a client at the
// server with the root credentials.
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_REGION=" + s.Region,
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
	}
}

// Output returns what the server printed.
func (s *Server) Output() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// Unreachable returns the URL of a loopback port where nothing listens,
// for testing what a client does when the store does not answer.
func Unreachable(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
