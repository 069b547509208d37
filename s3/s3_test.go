package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"largo"
	"largo/s3/s3test"
	"largo/storetest"
)

// newStore returns a Store on bucket with prefix, on srv.
func newStore(t *testing.T, srv *s3test.Server, bucket, prefix string) *Store {
	t.Helper()
	s, err := New(context.Background(), Config{
		Bucket:    bucket,
		Prefix:    prefix,
		Endpoint:  srv.Endpoint,
		Region:    srv.Region,
		AccessKey: srv.AccessKey,
		SecretKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		bucket := srv.MakeBucket(t)
		srv.PutAll(t, bucket, "", files)
		return newStore(t, srv, bucket, "")
	})
}

// TestStorePrefix runs the suite on a prefix of a bucket that holds other
// keys beside it, which must not show.
func TestStorePrefix(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		bucket := srv.MakeBucket(t)
		srv.PutAll(t, bucket, "site/v1/", files)
		for _, k := range []string{"outside.txt", "site/v10/x", "site/v1.txt", "site/v1-docs/a"} {
			srv.PutTo(t, bucket, k, []byte("not served"))
		}
		return newStore(t, srv, bucket, "/site/v1/")
	})
}

func TestParseURL(t *testing.T) {
	for _, tt := range []struct{ in, bucket, prefix string }{
		{"s3://bucket", "bucket", ""},
		{"s3://bucket/", "bucket", ""},
		{"s3://my.bucket-1/site/v1/", "my.bucket-1", "site/v1"},
	} {
		b, p, err := ParseURL(tt.in)
		if err != nil || b != tt.bucket || p != tt.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", tt.in, b, p, err)
		}
	}
	for _, in := range []string{"bucket", "http://bucket/x", "s3:///x", "s3://B/", "s3://ab/", "s3://bucket/a/../b", "s3://bucket/a//b", "s3://u:p@bucket/", "s3://bucket/?x=1"} {
		if b, p, err := ParseURL(in); err == nil {
			t.Errorf("ParseURL(%q) = %q, %q; want an error", in, b, p)
		}
	}
}

// TestNewErrors checks the start-up check: each misconfiguration is a
// one-line error that says what is wrong.
func TestNewErrors(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	good := Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	dead := s3test.Unreachable(t)
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"missing bucket", func(c *Config) { c.Bucket = "no-such-bucket" }, `bucket "no-such-bucket" does not exist`},
		{"wrong secret", func(c *Config) { c.SecretKey = "wrong" }, "refused the credentials"},
		{"unknown key", func(c *Config) { c.AccessKey = "nobody" }, "refused the credentials"},
		{"anonymous", func(c *Config) { c.AccessKey, c.SecretKey = "", "" }, "refused the credentials"},
		{"nothing listening", func(c *Config) { c.Endpoint = dead }, "cannot reach the endpoint"},
		{"bad endpoint", func(c *Config) { c.Endpoint = "ftp://x" }, "not of the form"},
		{"bad bucket name", func(c *Config) { c.Bucket = "Bad_Name" }, "bucket"},
	} {
		cfg := good
		tt.edit(&cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := New(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q", tt.name, err, tt.want)
		}
	}
	if _, err := New(context.Background(), good); err != nil {
		t.Fatalf("good config: %v", err)
	}
}

// TestListing covers what only object stores have: folder marker objects,
// keys no URL can name, pages of listing, and a folder whose only keys are
// hidden.
func TestListing(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	for _, k := range []string{"marker/", "back\\slash.txt", "only-hidden/.keep"} {
		srv.Put(t, k, nil)
	}
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("many/f%02d", i)
		srv.Put(t, k, []byte(k))
		want = append(want, fmt.Sprintf("f%02d", i))
	}
	for i := range 5 {
		srv.Put(t, fmt.Sprintf("many/d%d/x", i), []byte("x"))
		want = append(want, fmt.Sprintf("d%d/", i))
	}
	s := newStore(t, srv, srv.Bucket, "")
	s.page = 4
	ctx := context.Background()

	var got []string
	for in, err := range s.List(ctx, "many") {
		if err != nil {
			t.Fatal(err)
		}
		n := in.Name
		if in.IsDir {
			n += "/"
		} else if in.Size != 8 || in.ETag == "" || in.ModTime.IsZero() {
			t.Errorf("entry %+v", in)
		}
		got = append(got, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("List(many) over pages of 4 = %q; want %q", got, want)
	}

	got = nil
	for in, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, in.Name)
	}
	slices.Sort(got)
	if want := []string{"many", "marker", "only-hidden"}; !slices.Equal(got, want) {
		t.Errorf("List(root) = %q; want %q (no backslash key)", got, want)
	}
	for _, dir := range []string{"marker", "only-hidden"} {
		in, err := s.Stat(ctx, dir)
		if err != nil || !in.IsDir || in.Name != dir {
			t.Errorf("Stat(%s) = %+v, %v", dir, in, err)
		}
		for in, err := range s.List(ctx, dir) {
			t.Errorf("List(%s) yields %+v, %v; want nothing", dir, in, err)
		}
	}
}

// TestContentType: the type stored with the object is the file's.
func TestContentType(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.PutReader(t, srv.Bucket, "clip", strings.NewReader("not really"), 10, "video/mp4")
	s := newStore(t, srv, srv.Bucket, "")
	in, err := s.Stat(context.Background(), "clip")
	if err != nil || in.ContentType != "video/mp4" {
		t.Fatalf("Stat = %+v, %v", in, err)
	}
}

// apiErr is an S3 error answer as the SDK returns it.
func apiErr(status int, code string) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	return &smithy.OperationError{
		ServiceID:     "S3",
		OperationName: "GetObject",
		Err:           &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: code}}},
	}
}

func TestMapErr(t *testing.T) {
	for _, tt := range []struct {
		status int
		code   string
		kind   error
	}{
		{404, "NoSuchKey", largo.ErrNotFound},
		{404, "NotFound", largo.ErrNotFound},
		{403, "AccessDenied", largo.ErrPermission},
		{403, "Forbidden", largo.ErrPermission},
		{412, "PreconditionFailed", largo.ErrPrecondition},
		{404, "NoSuchBucket", nil},
		{403, "SignatureDoesNotMatch", nil},
		{404, "XAdminUserNotFound", nil},
		{503, "SlowDown", nil},
	} {
		err := mapErr("f", apiErr(tt.status, tt.code))
		if code, status, _, ok := apiError(err); !ok || code != tt.code || status != tt.status {
			t.Errorf("%s: the cause is lost: %v", tt.code, err)
		}
		for _, kind := range []error{largo.ErrNotFound, largo.ErrPermission, largo.ErrPrecondition} {
			if errors.Is(err, kind) != (kind == tt.kind) {
				t.Errorf("%s: %v; want kind %v", tt.code, err, tt.kind)
			}
		}
	}
	if err := mapErr("f", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}

// TestRegion: without a region, New asks the server for it.
func TestRegion(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s, err := New(context.Background(), Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if s.Region() != srv.Region {
		t.Errorf("Region() = %q; want %q", s.Region(), srv.Region)
	}
}
