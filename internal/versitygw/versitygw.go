// Package versitygw runs a real S3-compatible server on this machine:
// versitygw over a folder (its posix backend), on a free loopback port,
// with random root credentials and one empty bucket. The tests use it
// through package s3test, and the lab's bucket scenario directly. Attach
// gives the same for another S3 server already running, with a bucket of
// its own on it: the tests' way to run against other engines.
//
// versitygw is found on PATH or in the Go binary folder, where
// scripts/test-deps installs it.
package versitygw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// Program is the name of the server binary.
const Program = "versitygw"

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
	// Dir is the folder the server keeps its buckets in: the objects of
	// Bucket are the files under Dir/Bucket.
	Dir string
	// PID is the server's process ID.
	PID int
	// Client is a client with the root credentials.
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

// Start runs bin over the folder dir, writing its output to the file log,
// and returns once it has created the bucket. keepAlive keeps
// connections open between requests, as production S3 services do
// (versitygw's own default closes each after one response). Stop ends it.
func Start(bin, dir, log string, keepAlive bool) (*Server, error) {
	addr, err := FreeAddr()
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
		Dir:       dir,
		log:       log,
		done:      make(chan struct{}),
	}
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	args := []string{"--port", addr, "--quiet", "--region", s.Region}
	if keepAlive {
		args = append(args, "--keep-alive")
	}
	args = append(args, "posix", dir)
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
	s.Client = newClient(s)
	// Wait until it answers, then make the bucket.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, err = s.Client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &s.Bucket})
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited: %s", Program, s.Output())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("%s did not answer in 20s: %v\n%s", Program, err, s.Output())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Attach returns a Server for an S3 server that already runs at endpoint
// (another engine, started by whoever runs the tests), with the given
// credentials and region, and a new empty bucket of its own on it. Such
// a Server has no Dir and no PID, and Stop leaves the server running.
func Attach(endpoint, accessKey, secretKey, region string) (*Server, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("S3 endpoint %q: not a URL", endpoint)
	}
	if region == "" {
		region = "us-east-1"
	}
	s := &Server{
		Endpoint:  endpoint,
		Addr:      u.Host,
		AccessKey: accessKey,
		SecretKey: secretKey,
		Region:    region,
		Bucket:    "largo-" + randomHex(6),
	}
	s.Client = newClient(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.Client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &s.Bucket}); err != nil {
		return nil, fmt.Errorf("making a bucket on %s: %v", endpoint, err)
	}
	return s, nil
}

// Local reports whether the server runs here over a folder (Start), so
// that Dir and PID are its; false for one Attach found.
func (s *Server) Local() bool { return s.cmd != nil }

// Stop ends the server: SIGTERM, then SIGKILL after 5 seconds. It does
// nothing to a server Attach found.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
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

// newClient returns a client of s with its root credentials.
func newClient(s *Server) *awss3.Client {
	creds := aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, Source: Program}
	return awss3.New(awss3.Options{
		Region:                     s.Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		Retryer:                    aws.NopRetryer{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// Output returns what the server printed ("" for one Attach found).
func (s *Server) Output() string {
	if s.log == "" {
		return ""
	}
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
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
