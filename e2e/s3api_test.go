//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// s3Key is an S3 key of the access file of the S3 API's tests.
type s3Key struct{ id, secret string }

// The keys of the S3 tests' users: alice may do everything, bob read and
// list /pub only (as anonymous may).
var (
	aliceKey = s3Key{"LKALICE0000000000001", "alice-secret-0123456789-abcdefghijklmnop"}
	bobKey   = s3Key{"LKBOB000000000000002", "bob-secret-0123456789-abcdefghijklmnopqr"}
)

// s3Access is the access file of the S3 API's tests.
var s3Access = fmt.Sprintf(`
[[user]]
name = "alice"
s3_keys = [{ id = %q, secret = %q }]

[[user]]
name = "bob"
s3_keys = [{ id = %q, secret = %q }]

[[rule]]
path = "/"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/pub"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/pub"
users = ["alice"]
allow = ["all"]
`, aliceKey.id, aliceKey.secret, bobKey.id, bobKey.secret)

// startS3API runs largo on g with the S3 API on a listener of its own,
// under the S3 tests' access file, and args.
func startS3API(t testing.TB, g *target, args ...string) *server {
	t.Helper()
	args = append([]string{"--access", writeAccessFile(t, s3Access), "--s3-listen", "127.0.0.1:0", adminListen, "127.0.0.1:0"}, args...)
	var s *server
	if g.srv == nil {
		s = startServer(t, g.dir, args...)
	} else {
		s = startS3Largo(t, g.srv, "", args...)
	}
	if s.S3 == "" {
		t.Fatal("the ready line names no S3 listener")
	}
	return s
}

// s3Client is a client of the current aws-sdk-go-v2 for the S3 API at
// endpoint, signing with k (anonymous for the zero key), trusting pool
// for HTTPS; it sends the SDK's default checksums (CRC32, in a trailer
// over HTTPS).
func s3Client(endpoint string, k s3Key, pool *x509.CertPool) *awss3.Client {
	opts := awss3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(strings.TrimSuffix(endpoint, "/")),
		UsePathStyle: true,
		Credentials:  aws.AnonymousCredentials{},
		Retryer:      aws.NopRetryer{},
	}
	if k.id != "" {
		creds := aws.Credentials{AccessKeyID: k.id, SecretAccessKey: k.secret}
		opts.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	}
	if pool != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	return awss3.New(opts)
}

// apiCode returns the S3 code of an SDK's error, "" for none.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// getObject returns the bytes of key, failing t on an error.
func getObject(t testing.TB, c *awss3.Client, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String("largo"), Key: &key})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	return b
}

// TestS3APISDK drives the S3 API with the current aws-sdk-go-v2 over
// HTTPS, where it sends its default CRC32 checksums in aws-chunked
// trailers: objects written, read back with their metadata, ranges and
// conditions, listed (keys with spaces, '+', '%' and unicode, and more
// than a page), copied, removed, and a multipart upload completed; on
// a folder and on a bucket, each byte landing as the file itself.
func TestS3APISDK(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		cert, key, pool := selfSigned(t)
		s := startS3API(t, g, "--tls-cert", cert, "--tls-key", key)
		c := s3Client(s.S3, aliceKey, pool)
		ctx := context.Background()
		bucket := aws.String("largo")

		// Put, with metadata and a content type, then Head and Get.
		body := []byte("hello, S3 over largo\n")
		put, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt"), Body: bytes.NewReader(body),
			ContentType: aws.String("text/x-greeting"), Metadata: map[string]string{"color": "blue"}})
		if err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(g.dir, "docs", "hello.txt")); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("the file: %q, %v", got, err)
		}
		head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt")})
		if err != nil {
			t.Fatalf("HeadObject: %v", err)
		}
		if aws.ToString(head.ContentType) != "text/x-greeting" || head.Metadata["color"] != "blue" || aws.ToString(head.ETag) != aws.ToString(put.ETag) {
			t.Errorf("HeadObject: type %q, metadata %v, ETag %s (put %s)", aws.ToString(head.ContentType), head.Metadata, aws.ToString(head.ETag), aws.ToString(put.ETag))
		}
		rg, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt"), Range: aws.String("bytes=7-8")})
		if err != nil {
			t.Fatalf("ranged GetObject: %v", err)
		}
		if b, _ := io.ReadAll(rg.Body); string(b) != "S3" {
			t.Errorf("bytes 7-8: %q", b)
		}
		rg.Body.Close()

		// Conditions: If-None-Match: * refuses a second write; If-Match
		// of another version refuses one; a read's If-None-Match of its
		// ETag is not modified.
		_, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
		if apiCode(err) != "PreconditionFailed" {
			t.Errorf("If-None-Match: * over a file: %v", err)
		}
		_, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt"), Body: strings.NewReader("x"), IfMatch: aws.String(`"not-it"`)})
		if apiCode(err) != "PreconditionFailed" {
			t.Errorf("If-Match of another version: %v", err)
		}
		_, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("docs/absent.txt"), Body: strings.NewReader("x"), IfMatch: aws.String(`"not-it"`)})
		if apiCode(err) != "NoSuchKey" {
			t.Errorf("If-Match on a key that is not there: %v; want NoSuchKey, as S3", err)
		}
		_, err = c.GetObject(ctx, &awss3.GetObjectInput{Bucket: bucket, Key: aws.String("docs/hello.txt"), IfNoneMatch: put.ETag})
		var re interface{ HTTPStatusCode() int }
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotModified {
			t.Errorf("If-None-Match of its ETag: %v", err)
		}

		// A body the SDK cannot read twice goes in aws-chunked with its
		// CRC32 in the trailer.
		streamed := randomBytes(3<<20, 9)
		if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("docs/streamed.bin"),
			Body: struct{ io.Reader }{bytes.NewReader(streamed)}, ContentLength: aws.Int64(int64(len(streamed)))}); err != nil {
			t.Fatalf("PutObject of an unseekable body: %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(g.dir, "docs", "streamed.bin")); err != nil || !bytes.Equal(got, streamed) {
			t.Fatalf("the streamed file: %d bytes, %v", len(got), err)
		}

		// Keys that need encoding, listed and read back.
		odd := []string{"odd/a b.txt", "odd/a+b.txt", "odd/100%.txt", "odd/ünïcødé €.txt"}
		for _, k := range odd {
			if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
				t.Fatalf("PutObject %q: %v", k, err)
			}
		}
		for _, enc := range []types.EncodingType{"", types.EncodingTypeUrl} {
			out, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String("odd/"), EncodingType: enc})
			if err != nil {
				t.Fatalf("ListObjectsV2 (encoding %q): %v", enc, err)
			}
			var keys []string
			for _, o := range out.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
			want := slices.Clone(odd)
			slices.Sort(want)
			if enc == types.EncodingTypeUrl {
				for i, k := range keys {
					keys[i] = unescapeKey(t, k)
				}
			}
			if !slices.Equal(keys, want) {
				t.Errorf("ListObjectsV2 (encoding %q): %q, want %q", enc, keys, want)
			}
		}
		for _, k := range odd {
			if got := getObject(t, c, k); string(got) != k {
				t.Errorf("GetObject %q: %q", k, got)
			}
		}

		// More than a page: 1,005 files, listed in pages of 1,000 and
		// with a delimiter.
		for i := range 1005 {
			g.seed(t, fmt.Sprintf("many/f%04d", i), "x")
		}
		var n, pages int
		p := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String("many/")})
		last := ""
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("ListObjectsV2 page %d: %v", pages, err)
			}
			for _, o := range page.Contents {
				if k := aws.ToString(o.Key); k <= last {
					t.Fatalf("key %q after %q", k, last)
				} else {
					last = k
				}
				n++
			}
			pages++
		}
		if n != 1005 || pages != 2 {
			t.Errorf("listed %d keys in %d pages, want 1005 in 2", n, pages)
		}
		top, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: bucket, Delimiter: aws.String("/")})
		if err != nil {
			t.Fatalf("ListObjectsV2 with a delimiter: %v", err)
		}
		var prefixes []string
		for _, cp := range top.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(cp.Prefix))
		}
		if !slices.Equal(prefixes, []string{"docs/", "many/", "odd/"}) || len(top.Contents) != 0 {
			t.Errorf("the root: prefixes %q, %d files", prefixes, len(top.Contents))
		}

		// A server-side copy keeps the metadata; a removal removes.
		if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: bucket, Key: aws.String("docs/copy.txt"), CopySource: aws.String("largo/docs/hello.txt")}); err != nil {
			t.Fatalf("CopyObject: %v", err)
		}
		head, err = c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: bucket, Key: aws.String("docs/copy.txt")})
		if err != nil || head.Metadata["color"] != "blue" || aws.ToInt64(head.ContentLength) != int64(len(body)) {
			t.Errorf("the copy: %v, %v", head, err)
		}
		if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: bucket, Key: aws.String("docs/copy.txt")}); err != nil {
			t.Fatalf("DeleteObject: %v", err)
		}
		if _, err := os.Stat(filepath.Join(g.dir, "docs", "copy.txt")); !os.IsNotExist(err) {
			t.Errorf("the copy is still there: %v", err)
		}
		_, err = c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: bucket, Key: aws.String("docs/copy.txt")})
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotFound {
			t.Errorf("HeadObject of what was removed: %v", err)
		}

		// A multipart upload of three parts, the last short, with the
		// SDK's CRC32 checksums.
		parts := [][]byte{randomBytes(5<<20, 1), randomBytes(5<<20, 2), randomBytes(1<<20, 3)}
		whole := bytes.Join(parts, nil)
		multipartUpload(t, c, "big/three.bin", parts)
		if got, err := os.ReadFile(filepath.Join(g.dir, "big", "three.bin")); err != nil || !bytes.Equal(got, whole) {
			t.Fatalf("the multipart file: %d bytes, %v", len(got), err)
		}
		if g.srv == nil {
			// Readable by the folder's other readers, as every file
			// largo writes: the mode a new file gets (0644 less the
			// umask), as PutObject's below.
			mp, _ := os.Stat(filepath.Join(g.dir, "big", "three.bin"))
			one, _ := os.Stat(filepath.Join(g.dir, "docs", "hello.txt"))
			if mp == nil || one == nil || mp.Mode().Perm() != one.Mode().Perm() || mp.Mode().Perm()&0o044 == 0 {
				t.Errorf("the multipart file's mode %v; PutObject's %v", mp.Mode(), one.Mode())
			}
		}
		if got := getObject(t, c, "big/three.bin"); !bytes.Equal(got, whole) {
			t.Errorf("GetObject of the multipart file: %d bytes", len(got))
		}
		// Its first part is the whole (parts are not kept apart), and
		// there is no second.
		p1, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: bucket, Key: aws.String("big/three.bin"), PartNumber: aws.Int32(1)})
		if err != nil {
			t.Fatalf("GetObject of part 1: %v", err)
		}
		if n, _ := io.Copy(io.Discard, p1.Body); n != int64(len(whole)) {
			t.Errorf("part 1: %d bytes", n)
		}
		p1.Body.Close()
		if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: bucket, Key: aws.String("big/three.bin"), PartNumber: aws.Int32(2)}); apiCode(err) != "InvalidPartNumber" {
			t.Errorf("GetObject of part 2: %v", err)
		}
		g.clean(t)
	})
}

// multipartUpload uploads parts as a multipart upload of key, and
// completes it.
func multipartUpload(t testing.TB, c *awss3.Client, key string, parts [][]byte) {
	t.Helper()
	ctx := context.Background()
	bucket := aws.String("largo")
	mp, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: &key, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	var done []types.CompletedPart
	for i, p := range parts {
		out, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: &key, UploadId: mp.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", i+1, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: bucket, Key: &key, UploadId: mp.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
}

// randomBytes returns n pseudo-random bytes of seed.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// unescapeKey decodes a key of a listing made with encoding-type=url.
func unescapeKey(t testing.TB, k string) string {
	t.Helper()
	u, err := url.QueryUnescape(k)
	if err != nil {
		t.Fatalf("key %q: %v", k, err)
	}
	return u
}

// TestS3APIUploadsListedAndExpired: multipart uploads in progress are
// listed with their parts, a part may be a range of another object
// (UploadPartCopy), and an upload that receives nothing for
// --upload-expiry goes, with what it staged.
func TestS3APIUploadsListedAndExpired(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g, "--upload-expiry", "8s")
		c := s3Client(s.S3, aliceKey, nil)
		ctx := context.Background()
		bucket := aws.String("largo")
		src := randomBytes(6<<20, 8)
		if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String("src.bin"), Body: bytes.NewReader(src)}); err != nil {
			t.Fatal(err)
		}
		key := aws.String("up/copied.bin")
		mp, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		cp, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(1),
			CopySource: aws.String("largo/src.bin"), CopySourceRange: aws.String(fmt.Sprintf("bytes=0-%d", 5<<20-1))})
		if err != nil {
			t.Fatalf("UploadPartCopy: %v", err)
		}
		tail := []byte("the tail")
		up2, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(2), Body: bytes.NewReader(tail)})
		if err != nil {
			t.Fatal(err)
		}
		parts, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: bucket, Key: key, UploadId: mp.UploadId})
		if err != nil || len(parts.Parts) != 2 || aws.ToInt64(parts.Parts[0].Size) != 5<<20 || aws.ToInt64(parts.Parts[1].Size) != int64(len(tail)) {
			t.Fatalf("ListParts: %+v, %v", parts, err)
		}
		ups, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: bucket})
		if err != nil || len(ups.Uploads) != 1 || aws.ToString(ups.Uploads[0].UploadId) != aws.ToString(mp.UploadId) || aws.ToString(ups.Uploads[0].Key) != *key {
			t.Fatalf("ListMultipartUploads: %+v, %v", ups, err)
		}
		_, err = c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: bucket, Key: key, UploadId: mp.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{
				{PartNumber: aws.Int32(1), ETag: cp.CopyPartResult.ETag}, {PartNumber: aws.Int32(2), ETag: up2.ETag}}}})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got := getObject(t, c, *key); !bytes.Equal(got, append(append([]byte(nil), src[:5<<20]...), tail...)) {
			t.Errorf("the file of a copied part and a sent one: %d bytes", len(got))
		}

		// An upload left alone expires.
		left, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: aws.String("up/left.bin")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: aws.String("up/left.bin"), UploadId: left.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(tail)}); err != nil {
			t.Fatal(err)
		}
		staged := filepath.Join(g.dir, ".largo", "s3api", "staged", aws.ToString(left.UploadId))
		if _, err := os.Stat(staged); g.srv == nil && err != nil {
			t.Fatalf("the upload's staging: %v", err)
		}
		if !waitFor(40*time.Second, func() bool {
			ups, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: bucket})
			return err == nil && len(ups.Uploads) == 0
		}) {
			t.Fatal("the upload left alone did not expire")
		}
		_, err = c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: aws.String("up/left.bin"), UploadId: left.UploadId, PartNumber: aws.Int32(2), Body: bytes.NewReader(tail)})
		if apiCode(err) != "NoSuchUpload" {
			t.Errorf("a part of the expired upload: %v", err)
		}
		if _, err := os.Stat(staged); !os.IsNotExist(err) {
			t.Errorf("the expired upload's staging is still there: %v", err)
		}
		g.clean(t)
	})
}
