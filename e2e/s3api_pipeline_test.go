//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The rest of largo sees S3's writes as writes: the pre-upload hook is
// asked once per object (protocol "s3"), notifications tell of each, the
// quotas refuse a body before its first byte, and the file's digest is
// served on later reads.

// s3QuotaAccess gives alice a token for the file tree, an S3 key and a
// quota of 30 MiB.
var s3QuotaAccess = fmt.Sprintf(`
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
s3_keys = [{ id = %q, secret = %q }]
quota = "30MiB"

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]
`, aliceKey.id, aliceKey.secret)

func TestS3APIPipeline(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		rc := newHookReceiver(t)
		args := []string{"--access", writeAccessFile(t, s3QuotaAccess), "--s3-listen", "127.0.0.1:0",
			"--hook-pre-upload", rc.URL("/pre-upload"), "--hook-notify", rc.URL("/notify"), "--hook-secret-file", hookSecretFile(t)}
		var s *server
		if g.srv == nil {
			s = startServer(t, g.dir, args...)
		} else {
			s = startS3Largo(t, g.srv, "", args...)
		}
		c := s3Client(s.S3, aliceKey, nil)
		ctx := context.Background()
		bucket := aws.String("largo")

		// The hook refuses: nothing is stored, whether one PUT or a
		// multipart upload (refused at its creation).
		_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("in/refuse-put.txt"), Body: strings.NewReader("x")})
		if apiCode(err) != "AccessDenied" || !strings.Contains(err.Error(), "refused by policy") {
			t.Errorf("PutObject the hook refuses: %v", err)
		}
		_, err = c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("in/refuse-mp.bin")})
		if apiCode(err) != "AccessDenied" {
			t.Errorf("CreateMultipartUpload the hook refuses: %v", err)
		}
		absent(t, g.dir, "in")

		// Accepted with metadata: one PUT, one multipart upload of three
		// parts, each asked about once.
		body := []byte("put through S3")
		if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("in/meta-put.txt"), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		parts := [][]byte{randomBytes(5<<20, 4), randomBytes(5<<20, 5), randomBytes(1<<20, 6)}
		multipartUpload(t, c, "in/meta-mp.bin", parts)
		whole := bytes.Join(parts, nil)
		asked := map[string]int{}
		rc.mu.Lock()
		for _, req := range rc.asked {
			name, _ := req["name"].(string)
			if req["protocol"] != "s3" {
				t.Errorf("the hook was asked of %s with protocol %v", name, req["protocol"])
			}
			asked[name]++
		}
		rc.mu.Unlock()
		for _, n := range []string{"in/meta-put.txt", "in/meta-mp.bin"} {
			if asked[n] != 1 {
				t.Errorf("the hook was asked %d times of %s, want once", asked[n], n)
			}
		}
		evs := rc.waitEvents(t, 10*time.Second, "the committed events", func(evs []hookEvent) bool {
			return len(eventsOf(evs, "committed")) >= 2
		})
		committed := eventsOf(evs, "committed")
		for name, content := range map[string][]byte{"in/meta-put.txt": body, "in/meta-mp.bin": whole} {
			e, ok := committed[name]
			switch {
			case !ok:
				t.Errorf("no committed event of %s", name)
			case e.Protocol != "s3" || e.Size != int64(len(content)) || e.Metadata["project"] != "p1" || e.Metadata["by"] != "s3":
				t.Errorf("the committed event of %s: %+v", name, e)
			case e.SHA256 != "" && e.SHA256 != sha256Hex(content):
				t.Errorf("the committed event of %s names another digest", name)
			case e.SHA256 == "" && (name == "in/meta-put.txt" || g.srv == nil):
				t.Errorf("the committed event of %s names no digest", name)
			}
		}

		// Their digests on later reads, over HTTP and over S3 (a
		// multipart upload's on a folder: a bucket's parts cannot be read
		// before they are completed).
		for name, content := range map[string][]byte{"in/meta-put.txt": body, "in/meta-mp.bin": whole} {
			resp := get(t, s.URL+name, "Authorization", "Bearer alice-token-0123456789")
			resp.Body.Close()
			want := reprDigest(sha256Hex(content))
			if got := resp.Header.Get("Repr-Digest"); got != want && (g.srv == nil || name == "in/meta-put.txt") {
				t.Errorf("GET %s over HTTP: Repr-Digest %q, want %q", name, got, want)
			}
			out, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: bucket, Key: aws.String(name), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(out.ChecksumSHA256); got != "" && got != strings.TrimSuffix(strings.TrimPrefix(want, "sha-256=:"), ":") {
				t.Errorf("HeadObject %s: x-amz-checksum-sha256 %q", name, got)
			}
		}

		// Over the quota: refused before a byte of the body is sent, a
		// PUT and a part alike.
		if code := s3RefusedBeforeBody(t, s, "PUT", "big/over.bin", "", 40<<20); code != http.StatusInsufficientStorage {
			t.Errorf("a PUT over the quota: %d before the body, want 507", code)
		}
		mp, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("big/parts.bin")})
		if err != nil {
			t.Fatal(err)
		}
		if code := s3RefusedBeforeBody(t, s, "PUT", "big/parts.bin", "partNumber=1&uploadId="+aws.ToString(mp.UploadId), 40<<20); code != http.StatusInsufficientStorage {
			t.Errorf("a part over the quota: %d before the body, want 507", code)
		}
		absent(t, g.dir, "big")
		if _, err := c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: bucket, Key: aws.String("big/parts.bin"), UploadId: mp.UploadId}); err != nil {
			t.Errorf("AbortMultipartUpload: %v", err)
		}
		g.clean(t)
	})
}

// s3RefusedBeforeBody sends the headers of a signed request for key with
// a body of size bytes that asks for a 100 Continue, and returns the
// status of the answer that comes instead, before a byte of the body.
func s3RefusedBeforeBody(t *testing.T, s *server, method, key, query string, size int64) int {
	t.Helper()
	u := s.S3 + "largo/" + keyPath(key)
	if query != "" {
		u += "?" + query
	}
	req, _ := http.NewRequest(method, u, nil)
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	req.Header.Set("Expect", "100-continue")
	req.ContentLength = size
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: aliceKey.id, SecretAccessKey: aliceKey.secret}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, req.URL.RequestURI(), req.URL.Host, size)
	for k, vs := range req.Header {
		fmt.Fprintf(conn, "%s: %s\r\n", k, vs[0])
	}
	fmt.Fprint(conn, "\r\n")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
