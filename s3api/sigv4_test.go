package s3api

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The example credentials and time of AWS's documentation of Signature
// Version 4 for S3, whose published signatures the tests check.
const (
	exampleID     = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var exampleTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

// verifyAt checks r's signature at now with the example secret.
func verifyAt(t *testing.T, r *http.Request, now time.Time) (*signature, error) {
	t.Helper()
	s, ok, err := signedBy(r)
	if err != nil {
		return nil, err
	}
	if !ok {
		t.Fatal("no signature found")
	}
	if err := s.checkTime(now); err != nil {
		return nil, err
	}
	if s.cred.id != exampleID {
		t.Fatalf("access key %q", s.cred.id)
	}
	return s.verify(r, exampleSecret)
}

// TestSignatureHeader: AWS's example GET with a Range, signed in the
// Authorization header.
func TestSignatureHeader(t *testing.T) {
	r := httptest.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	if _, err := verifyAt(t, r, exampleTime.Add(time.Minute)); err != nil {
		t.Fatalf("AWS's example refused: %v", err)
	}
	// One byte of a signed header changed: refused.
	r.Header.Set("Range", "bytes=0-8")
	if _, err := verifyAt(t, r, exampleTime); err != errSignature {
		t.Fatalf("a changed Range: %v, want SignatureDoesNotMatch", err)
	}
	r.Header.Set("Range", "bytes=0-9")
	// Outside 15 minutes either way: refused.
	for _, now := range []time.Time{exampleTime.Add(16 * time.Minute), exampleTime.Add(-16 * time.Minute)} {
		if _, err := verifyAt(t, r, now); err != errSkewed {
			t.Errorf("at %v: %v, want RequestTimeTooSkewed", now, err)
		}
	}
}

// TestSignaturePresigned: AWS's example presigned URL, valid for a day,
// and refused once it has expired.
func TestSignaturePresigned(t *testing.T) {
	u := "http://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
	r := httptest.NewRequest("GET", u, nil)
	if _, err := verifyAt(t, r, exampleTime.Add(23*time.Hour)); err != nil {
		t.Fatalf("AWS's example refused: %v", err)
	}
	if _, err := verifyAt(t, r, exampleTime.Add(24*time.Hour)); err != errExpired {
		t.Fatalf("a day later: %v, want the expired refusal", err)
	}
	if _, err := verifyAt(t, r, exampleTime.Add(-20*time.Minute)); err != errSkewed {
		t.Fatalf("before its time: %v, want RequestTimeTooSkewed", err)
	}
	long := strings.Replace(u, "X-Amz-Expires=86400", "X-Amz-Expires=604801", 1)
	if _, _, err := signedBy(httptest.NewRequest("GET", long, nil)); err != errAuthQuery {
		t.Fatalf("X-Amz-Expires over a week: %v", err)
	}
	// The signature of another path: refused.
	r = httptest.NewRequest("GET", strings.Replace(u, "test.txt", "test2.txt", 1), nil)
	if _, err := verifyAt(t, r, exampleTime); err != errSignature {
		t.Fatalf("another path: %v", err)
	}
}

// streamingExample is AWS's example of a chunked upload: 65 KiB of 'a'
// in chunks of 64 KiB, signed chunk by chunk.
func streamingExample(t *testing.T, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", strings.NewReader(body))
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	r.Header.Set("X-Amz-Content-Sha256", streamingSigned)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("Content-Length", "66824")
	return r
}

var (
	chunk1 = "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n" + strings.Repeat("a", 65536) + "\r\n"
	chunk2 = "400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" + strings.Repeat("a", 1024) + "\r\n"
	chunk3 = "0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n"
)

// readStreaming reads the example request's body as PutObject would.
func readStreaming(t *testing.T, body string) (string, error) {
	t.Helper()
	r := streamingExample(t, body)
	sig, err := verifyAt(t, r, exampleTime)
	if err != nil {
		t.Fatalf("AWS's example seed signature refused: %v", err)
	}
	p, err := bodyOf(r.WithContext(withSignature(r.Context(), sig)), false, false)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(p)
	return string(b), err
}

// TestStreamingSigned: AWS's example chunks verify one by one; a chunk
// changed, dropped, replayed or moved does not.
func TestStreamingSigned(t *testing.T) {
	got, err := readStreaming(t, chunk1+chunk2+chunk3)
	if err != nil || got != strings.Repeat("a", 66560) {
		t.Fatalf("AWS's example: %d bytes, %v", len(got), err)
	}
	changed := strings.Replace(chunk2, "aaaa", "aaab", 1)
	for name, body := range map[string]string{
		"a byte changed":          chunk1 + changed + chunk3,
		"the first chunk twice":   chunk1 + chunk1 + chunk2 + chunk3,
		"chunks swapped":          chunk2 + chunk1 + chunk3,
		"the last chunk replayed": chunk1 + chunk3 + chunk2 + chunk3,
	} {
		if _, err := readStreaming(t, body); !errors.Is(err, errChunkSig) && !errors.Is(err, errDecodedLength) {
			t.Errorf("%s: %v, want the chunk signature refused", name, err)
		}
	}
	for name, body := range map[string]string{
		"cut in a chunk":       chunk1[:1000],
		"no last chunk":        chunk1 + chunk2,
		"a signature too long": strings.Replace(chunk1, "chunk-signature=ad80", "chunk-signature=aad80", 1) + chunk2 + chunk3,
		"a size not in hex":    strings.Replace(chunk1, "10000;", "1000z;", 1) + chunk2 + chunk3,
	} {
		if _, err := readStreaming(t, body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestUnsignedTrailer: STREAMING-UNSIGNED-PAYLOAD-TRAILER as the SDKs
// send it, with a CRC32 trailer: a right one passes, a wrong one and a
// missing one are refused.
func TestUnsignedTrailer(t *testing.T) {
	payload := "Hello world"
	for name, tc := range map[string]struct {
		trailer string
		want    error
	}{
		"right":   {"x-amz-checksum-crc32:i9aeUg==\r\n", nil},
		"wrong":   {"x-amz-checksum-crc32:AAAAAA==\r\n", errBadDigest},
		"missing": {"", errTrailer},
	} {
		body := "b\r\n" + payload + "\r\n0\r\n" + tc.trailer + "\r\n"
		r := httptest.NewRequest("PUT", "http://h/b/k", strings.NewReader(body))
		r.Header.Set("X-Amz-Content-Sha256", streamingUnsigned)
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
		r.Header.Set("X-Amz-Decoded-Content-Length", "11")
		p, err := bodyOf(r, false, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(p)
		if !errors.Is(err, tc.want) || tc.want == nil && string(got) != payload {
			t.Errorf("%s: %q, %v; want %v", name, got, err, tc.want)
		}
	}
}

// TestChecksums: each algorithm's value of a known input, CRC64NVME's
// the check value of its catalogue entry.
func TestChecksums(t *testing.T) {
	h := checksumAlgs["crc64nvme"]()
	h.Write([]byte("123456789"))
	if got := h.Sum(nil); !bytes.Equal(got, []byte{0xae, 0x8b, 0x14, 0x86, 0x0a, 0x79, 0x98, 0x88}) {
		t.Errorf("CRC64NVME of 123456789 is %x, want ae8b14860a799888", got)
	}
	h = checksumAlgs["crc32c"]()
	h.Write([]byte("123456789"))
	if got := h.Sum(nil); !bytes.Equal(got, []byte{0xe3, 0x06, 0x92, 0x83}) {
		t.Errorf("CRC32C of 123456789 is %x, want e3069283", got)
	}
}

// TestCanonicalQuery: names and values encoded as SigV4 does, sorted,
// a presigned URL's own signature left out.
func TestCanonicalQuery(t *testing.T) {
	got := canonicalQuery("prefix=a%20b&list-type=2&X-Amz-Signature=x&marker=&delimiter=%2F&k=%7E+", true)
	want := "delimiter=%2F&k=~%20&list-type=2&marker=&prefix=a%20b"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// signChunks frames and signs chunks as STREAMING-AWS4-HMAC-SHA256-
// PAYLOAD-TRAILER asks, from a request's signature sig: each chunk's
// signature chained to the one before, then the trailer's.
func signChunks(sig *signature, chunks []string, trailer string) string {
	prev := sig.seed
	var b strings.Builder
	for _, c := range chunks {
		sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + sig.date + "\n" + sig.scope + "\n" + prev + "\n" + emptySHA256 + "\n" + sha256Hex(c)
		prev = hex.EncodeToString(hmacSHA256(sig.key, sts))
		fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(c), prev)
		if c != "" {
			b.WriteString(c + "\r\n") // the last chunk, of no bytes, is followed by the trailer
		}
	}
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + sig.date + "\n" + sig.scope + "\n" + prev + "\n" + sha256Hex(trailer)
	b.WriteString(trailer + "x-amz-trailer-signature:" + hex.EncodeToString(hmacSHA256(sig.key, sts)) + "\r\n\r\n")
	return b.String()
}

// TestSignedTrailer: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, its
// chunks and its trailer signed: taken as signed; a trailer changed after
// signing, or its checksum wrong, refused.
func TestSignedTrailer(t *testing.T) {
	sig := &signature{key: signingKey(exampleSecret, credential{day: "20130524", region: "us-east-1", service: "s3"}),
		date: "20130524T000000Z", scope: "20130524/us-east-1/s3/aws4_request", seed: strings.Repeat("ab", 32), payload: streamingSignedTrailer}
	read := func(body string) (string, error) {
		r := httptest.NewRequest("PUT", "http://h/b/k", strings.NewReader(body))
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32c")
		r.Header.Set("X-Amz-Decoded-Content-Length", "11")
		p, err := bodyOf(r.WithContext(withSignature(r.Context(), sig)), false, false)
		if err != nil {
			return "", err
		}
		b, err := io.ReadAll(p)
		return string(b), err
	}
	chunks := []string{"Hello", " world", ""}
	right := "x-amz-checksum-crc32c:" + crc32cOf("Hello world") + "\n"
	if got, err := read(signChunks(sig, chunks, right)); err != nil || got != "Hello world" {
		t.Fatalf("a signed trailer: %q, %v", got, err)
	}
	changed := strings.Replace(signChunks(sig, chunks, right), crc32cOf("Hello world"), "AAAAAA==", 1)
	if _, err := read(changed); !errors.Is(err, errChunkSig) {
		t.Errorf("a trailer changed after signing: %v", err)
	}
	wrong := "x-amz-checksum-crc32c:AAAAAA==\n"
	if _, err := read(signChunks(sig, chunks, wrong)); !errors.Is(err, errBadDigest) {
		t.Errorf("a signed trailer with a wrong checksum: %v", err)
	}
}

// crc32cOf is the base64 CRC32C of s.
func crc32cOf(s string) string {
	h := checksumAlgs["crc32c"]()
	h.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
