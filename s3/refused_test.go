package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"largo"
	"largo/s3/s3test"
)

// TestConditionRefusedUnanswered: a server may refuse a condition before
// it has read the body and reset the connection, so that its answer never
// reaches the client. A proxy in front of the S3 server does that to
// conditional PUTs of a.txt: the commit must fail as the precondition it
// broke, not as a broken connection, and the file keep its content.
func TestConditionRefusedUnanswered(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.MakeBucket(t)
	srv.PutAll(t, bucket, "w/", map[string]string{"a.txt": "old"})
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.Header.Get("If-None-Match") == "" || !strings.HasSuffix(r.URL.Path, "/a.txt") {
			forward.ServeHTTP(w, r)
			return
		}
		io.CopyN(io.Discard, r.Body, 64<<10)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not an orderly close
		}
		conn.Close()
	}))
	defer proxy.Close()

	ctx := context.Background()
	s, err := New(ctx, Config{
		Bucket: bucket, Prefix: "w", Endpoint: proxy.URL, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{-1, 6 << 20} {
		cond := largo.Condition{IfNoneMatch: true}
		u, err := s.Create(ctx, "a.txt", largo.CreateOptions{Size: size, Condition: cond})
		if err != nil {
			t.Fatal(err)
		}
		u.Write(bytes.Repeat([]byte("x"), 6<<20))
		_, _, err = u.Commit(ctx, cond)
		u.Abort()
		if !errors.Is(err, largo.ErrPrecondition) {
			t.Errorf("size %d: commit = %v, want a failed precondition", size, err)
		}
	}
	if got := readAll(t, s, "a.txt"); got != "old" {
		t.Errorf("a.txt = %.20q, want its old content", got)
	}
}
