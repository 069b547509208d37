//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Hostile input to the S3 API: what is refused is refused with S3's
// code, before anything is stored, and leaves nothing behind.

// keyPath escapes a key for a URL's path as S3's clients do: every byte
// but the unreserved ones and '/'.
func keyPath(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// signed sends a request of method for key (query appended), with body,
// signed with k at time at in the Authorization header, its payload's
// SHA-256 signed.
func signed(t testing.TB, s *server, method, key, query string, body []byte, k s3Key, at time.Time, hdr ...string) *http.Response {
	t.Helper()
	u := s.S3 + "largo/" + keyPath(key)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	signRequest(t, req, payload, k, at)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// signRequest signs req with k at time at for payload.
func signRequest(t testing.TB, req *http.Request, payload string, k s3Key, at time.Time) {
	t.Helper()
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: k.id, SecretAccessKey: k.secret}
	if err := signer.SignHTTP(context.Background(), creds, req, payload, "s3", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
}

// s3Code reads the code of an S3 error answer, and closes it.
func s3Code(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var e struct {
		Code string `xml:"Code"`
	}
	b, _ := io.ReadAll(resp.Body)
	xml.Unmarshal(b, &e)
	if e.Code == "" {
		return resp.Header.Get("X-Amz-Error-Code")
	}
	return e.Code
}

// TestS3APIRefusals: wrong and unknown keys, skewed clocks, expired
// presigned URLs, keys that can be no name, the state area's name, and a
// user writing where the rules say no: each refused with its code, and
// nothing stored.
func TestS3APIRefusals(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		now := time.Now()
		body := []byte("payload")

		for name, tc := range map[string]struct {
			key  s3Key
			at   time.Time
			code string
		}{
			"a wrong secret":        {s3Key{aliceKey.id, aliceKey.secret + "x"}, now, "SignatureDoesNotMatch"},
			"an unknown key":        {s3Key{"LKNOBODY000000000000", aliceKey.secret}, now, "InvalidAccessKeyId"},
			"20 minutes ago":        {aliceKey, now.Add(-20 * time.Minute), "RequestTimeTooSkewed"},
			"20 minutes from now":   {aliceKey, now.Add(20 * time.Minute), "RequestTimeTooSkewed"},
			"bob, who only reads":   {bobKey, now, "AccessDenied"},
			"anonymous (no header)": {s3Key{}, now, "AccessDenied"},
		} {
			var resp *http.Response
			if tc.key.id == "" {
				req, _ := http.NewRequest("PUT", s.S3+"largo/refused/x.txt", bytes.NewReader(body))
				var err error
				if resp, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
			} else {
				resp = signed(t, s, "PUT", "refused/x.txt", "", body, tc.key, tc.at)
			}
			if code := s3Code(t, resp); code != tc.code || resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %d %s, want 403 %s", name, resp.StatusCode, code, tc.code)
			}
		}
		// A body that differs from its signed SHA-256.
		req, _ := http.NewRequest("PUT", s.S3+"largo/refused/x.txt", strings.NewReader("other bytes"))
		sum := sha256.Sum256(body)
		req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		signRequest(t, req, hex.EncodeToString(sum[:]), aliceKey, now)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if code := s3Code(t, resp); code != "XAmzContentSHA256Mismatch" {
			t.Errorf("a body that differs from its SHA-256: %d %s", resp.StatusCode, code)
		}
		// A Content-MD5, a CRC32, a CRC64NVME that differ.
		for _, h := range [][2]string{{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}, {"X-Amz-Checksum-Crc32", "AAAAAA=="}, {"X-Amz-Checksum-Crc64nvme", "AAAAAAAAAAA="}} {
			resp = signed(t, s, "PUT", "refused/x.txt", "", body, aliceKey, now, h[0], h[1])
			if code := s3Code(t, resp); code != "BadDigest" {
				t.Errorf("a wrong %s: %d %s", h[0], resp.StatusCode, code)
			}
		}
		// An empty Content-MD5 is no MD5, not none.
		resp = signed(t, s, "PUT", "refused/x.txt", "", body, aliceKey, now, "Content-MD5", "")
		if code := s3Code(t, resp); code != "InvalidDigest" {
			t.Errorf("an empty Content-MD5: %d %s", resp.StatusCode, code)
		}
		absent(t, g.dir, "refused")

		// Keys that can be no name, and the state area's.
		for _, key := range []string{"a/../b.txt", "a/./b.txt", "a//b.txt", "ctl/\x01.txt", "ctl/line\nbreak.txt", "back\\slash.txt", ".largo/x.txt", ".largo/s3api/uploads/x", "dot/.hidden"} {
			resp := signed(t, s, "PUT", key, "", body, aliceKey, now)
			if code := s3Code(t, resp); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
				t.Errorf("PutObject %q: %d %s, want it refused", key, resp.StatusCode, code)
			}
			resp = signed(t, s, "POST", key, "uploads", nil, aliceKey, now)
			if code := s3Code(t, resp); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
				t.Errorf("CreateMultipartUpload %q: %d %s, want it refused", key, resp.StatusCode, code)
			}
		}
		absent(t, g.dir, "b.txt")
		absent(t, g.dir, "a")
		absent(t, g.dir, "ctl")
		absent(t, g.dir, "dot")
		absent(t, g.dir, ".largo/x.txt")

		// An expired presigned URL, and one whose path was changed.
		c := s3Client(s.S3, aliceKey, nil)
		if _, err := c.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String("largo"), Key: aws.String("pub/p.txt"), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]struct {
			at   time.Time
			path string
			code int
		}{
			"valid":        {now, "largo/pub/p.txt", 200},
			"expired":      {now.Add(-2 * time.Hour), "largo/pub/p.txt", 403},
			"another path": {now, "largo/pub/q.txt", 403},
		} {
			req, _ := http.NewRequest("GET", s.S3+"largo/pub/p.txt?X-Amz-Expires=3600", nil)
			u, _, err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).PresignHTTP(context.Background(),
				aws.Credentials{AccessKeyID: aliceKey.id, SecretAccessKey: aliceKey.secret}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", tc.at)
			if err != nil {
				t.Fatal(err)
			}
			resp := get(t, strings.Replace(u, "largo/pub/p.txt", tc.path, 1))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("presigned, %s: %d, want %d", name, resp.StatusCode, tc.code)
			}
		}
		// Anonymous reads /pub as the rules say, and lists nothing else.
		if resp := get(t, s.S3+"largo/pub/p.txt"); resp.StatusCode != 200 {
			t.Errorf("anonymous GET of /pub/p.txt: %d", resp.StatusCode)
		}
		if resp := get(t, s.S3+"largo?list-type=2"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous listing of the root: %d", resp.StatusCode)
		}
	})
}

// TestS3APIHiddenNotListed: hidden names and what a principal may not
// read never appear in a listing, whoever lists.
func TestS3APIHiddenNotListed(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	g.seed(t, "pub/seen.txt", "x")
	g.seed(t, "pub/.hidden", "x")
	g.seed(t, "secret/s.txt", "x")
	s := startS3API(t, g)
	for who, k := range map[string]s3Key{"alice": aliceKey, "bob": bobKey} {
		out, err := s3Client(s.S3, k, nil).ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("largo"), Prefix: aws.String("pub/")})
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "pub/seen.txt" {
			t.Errorf("%s lists %v", who, out.Contents)
		}
	}
	_, err := s3Client(s.S3, bobKey, nil).ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("largo"), Prefix: aws.String("secret/")})
	if apiCode(err) != "AccessDenied" {
		t.Errorf("bob lists /secret: %v", err)
	}
}

// TestS3APIMultipartRefusals: parts out of order, a part number past
// 10,000, a part below 5 MiB in the middle, a Complete with a wrong ETag:
// each refused with its code, the upload still there to be completed
// right; a part sent again replaces the first.
func TestS3APIMultipartRefusals(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		c := s3Client(s.S3, aliceKey, nil)
		ctx := context.Background()
		bucket, key := aws.String("largo"), aws.String("mp/file.bin")
		mp, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		part := func(n int32, b []byte) *string {
			t.Helper()
			out, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(b)})
			if err != nil {
				t.Fatalf("UploadPart %d: %v", n, err)
			}
			return out.ETag
		}
		complete := func(parts ...types.CompletedPart) error {
			_, err := c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: bucket, Key: key, UploadId: mp.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
			return err
		}
		p1 := randomBytes(5<<20, 1)
		first := part(1, randomBytes(5<<20, 9)) // sent again below
		e1 := part(1, p1)
		small := part(2, []byte("short"))
		p3 := randomBytes(5<<20, 3)
		e3 := part(3, p3)
		cp := func(n int32, e *string) types.CompletedPart {
			return types.CompletedPart{PartNumber: aws.Int32(n), ETag: e}
		}

		if _, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(10001), Body: strings.NewReader("x")}); apiCode(err) != "InvalidArgument" {
			t.Errorf("part 10001: %v", err)
		}
		for name, tc := range map[string]struct {
			parts []types.CompletedPart
			code  string
		}{
			"out of order":          {[]types.CompletedPart{cp(3, e3), cp(1, e1)}, "InvalidPartOrder"},
			"a small one between":   {[]types.CompletedPart{cp(1, e1), cp(2, small), cp(3, e3)}, "EntityTooSmall"},
			"a wrong ETag":          {[]types.CompletedPart{cp(1, aws.String(`"0123456789abcdef0123456789abcdef"`)), cp(3, e3)}, "InvalidPart"},
			"the replaced part's":   {[]types.CompletedPart{cp(1, first), cp(3, e3)}, "InvalidPart"},
			"a part never sent":     {[]types.CompletedPart{cp(1, e1), cp(4, e3)}, "InvalidPart"},
			"10,001 parts":          {tooMany(e1), "MalformedXML"},
			"a part number of zero": {[]types.CompletedPart{cp(0, e1)}, "InvalidArgument"},
		} {
			if err := complete(tc.parts...); apiCode(err) != tc.code {
				t.Errorf("Complete, %s: %v, want %s", name, err, tc.code)
			}
		}
		absent(t, g.dir, "mp/file.bin")
		// Parts 1 and 3 make a file (on a bucket, every part sent must be
		// listed: part 2 goes again, long enough).
		want := append(append([]byte(nil), p1...), p3...)
		list := []types.CompletedPart{cp(1, e1), cp(3, e3)}
		if g.srv != nil {
			p2 := randomBytes(5<<20, 2)
			list = []types.CompletedPart{cp(1, e1), cp(2, part(2, p2)), cp(3, e3)}
			want = append(append(append([]byte(nil), p1...), p2...), p3...)
		}
		if err := complete(list...); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(g.dir, "mp", "file.bin")); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the file: %d bytes, %v", len(got), err)
		}
		// The Complete sent again is answered the same.
		if err := complete(list...); err != nil {
			t.Errorf("Complete sent again: %v", err)
		}
		g.clean(t)
	})
}

// tooMany lists 10,001 parts.
func tooMany(e *string) []types.CompletedPart {
	parts := make([]types.CompletedPart, 10001)
	for i := range parts {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: e}
	}
	return parts
}

// chunkSigner signs an aws-chunked body chunk by chunk, as
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD asks, from the request's seed
// signature.
type chunkSigner struct {
	key         []byte
	date, scope string
	prev        string
}

func hmacOf(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// newChunkSigner takes the seed signature of req, signed by k at at.
func newChunkSigner(req *http.Request, k s3Key, at time.Time) *chunkSigner {
	day := at.UTC().Format("20060102")
	key := hmacOf(hmacOf(hmacOf(hmacOf([]byte("AWS4"+k.secret), day), "us-east-1"), "s3"), "aws4_request")
	auth := req.Header.Get("Authorization")
	seed := auth[strings.LastIndex(auth, "Signature=")+len("Signature="):]
	return &chunkSigner{key: key, date: at.UTC().Format("20060102T150405Z"), scope: day + "/us-east-1/s3/aws4_request", prev: seed}
}

// chunk returns data framed and signed as the next chunk.
func (c *chunkSigner) chunk(data []byte) string {
	sum := sha256.Sum256(data)
	empty := sha256.Sum256(nil)
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.date + "\n" + c.scope + "\n" + c.prev + "\n" + hex.EncodeToString(empty[:]) + "\n" + hex.EncodeToString(sum[:])
	c.prev = hex.EncodeToString(hmacOf(c.key, sts))
	return strconv.FormatInt(int64(len(data)), 16) + ";chunk-signature=" + c.prev + "\r\n" + string(data) + "\r\n"
}

// TestS3APIStreamingReplay: a signed aws-chunked body whose chunks are
// replayed, swapped or changed is refused, and nothing is stored; the
// same chunks in order are stored.
func TestS3APIStreamingReplay(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := startS3API(t, g)
		a, b := bytes.Repeat([]byte("a"), 8192), bytes.Repeat([]byte("b"), 100)
		send := func(name string, body func(c *chunkSigner) string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest("PUT", s.S3+"largo/stream/"+name, nil)
			req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
			req.Header.Set("Content-Encoding", "aws-chunked")
			req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(len(a)+len(b)))
			now := time.Now()
			signRequest(t, req, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", aliceKey, now)
			text := body(newChunkSigner(req, aliceKey, now))
			req.Body = io.NopCloser(strings.NewReader(text))
			req.ContentLength = int64(len(text))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp := send("ok.txt", func(c *chunkSigner) string { return c.chunk(a) + c.chunk(b) + c.chunk(nil) + "\r\n" })
		if code := s3Code(t, resp); resp.StatusCode != 200 {
			t.Fatalf("the chunks in order: %d %s", resp.StatusCode, code)
		}
		if got, _ := os.ReadFile(filepath.Join(g.dir, "stream", "ok.txt")); !bytes.Equal(got, append(append([]byte(nil), a...), b...)) {
			t.Fatalf("stored %d bytes", len(got))
		}
		for name, body := range map[string]func(c *chunkSigner) string{
			"replayed": func(c *chunkSigner) string {
				first := c.chunk(a)
				c.chunk(b)
				return first + first + c.chunk(nil) + "\r\n"
			},
			"swapped": func(c *chunkSigner) string {
				ca, cb := c.chunk(a), c.chunk(b)
				return cb + ca + c.chunk(nil) + "\r\n"
			},
			"changed": func(c *chunkSigner) string {
				return strings.Replace(c.chunk(a), "aaaa", "aaab", 1) + c.chunk(b) + c.chunk(nil) + "\r\n"
			},
			"without its last chunk": func(c *chunkSigner) string { return c.chunk(a) + c.chunk(b) },
		} {
			resp := send(strings.ReplaceAll(name, " ", "-"), body)
			if code := s3Code(t, resp); resp.StatusCode < 400 {
				t.Errorf("chunks %s: %d %s", name, resp.StatusCode, code)
			}
			absent(t, g.dir, "stream/"+strings.ReplaceAll(name, " ", "-"))
		}
		g.clean(t)
	})
}

// TestS3APIEmptyBodyContinue: a PUT of an empty body that asks for a 100
// Continue gets one before its answer (botocore's connection is spoiled
// without it), and the connection serves the next request.
func TestS3APIEmptyBodyContinue(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := startS3API(t, g)
	req, _ := http.NewRequest("PUT", s.S3+"largo/empty.txt", http.NoBody)
	req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("Content-Length", "0")
	signRequest(t, req, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", aliceKey, time.Now())
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(s.S3, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /largo/empty.txt HTTP/1.1\r\nHost: %s\r\n", req.Host)
	for k, vs := range req.Header {
		fmt.Fprintf(conn, "%s: %s\r\n", k, vs[0])
	}
	fmt.Fprint(conn, "\r\n")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("first answer line %q, %v: want a 100 Continue", line, err)
	}
	for line != "\r\n" {
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the answer after the 100 Continue: %v, %v", resp, err)
	}
}
