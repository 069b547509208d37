package s3api

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"strings"
)

// What a body must hash to, as the request says it: Content-MD5, the
// payload's SHA-256 in x-amz-content-sha256, and one x-amz-checksum-*
// (CRC32, CRC32C, CRC64NVME, SHA1 or SHA256) in a header or in the
// trailer of an aws-chunked body. Each is checked when the body ends,
// before anything of it is committed: a body that differs leaves nothing
// stored.

// checksumAlgs are the checksums S3 knows, by the name of their header
// (x-amz-checksum-NAME).
var checksumAlgs = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64.New(crc64NVME) },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

// crc64NVME is the table of CRC-64/NVME (reflected polynomial
// 0x9a6c9329ac4bc9b5; Go's crc64 inverts before and after, as it needs).
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumHeader is the header of a checksum: x-amz-checksum-NAME.
func checksumHeader(alg string) string { return "x-amz-checksum-" + alg }

// expect is what a body must hash to.
type expect struct {
	md5     []byte // Content-MD5, nil for none
	sha256  []byte // x-amz-content-sha256 when it is a hash, nil otherwise
	alg     string // the checksum's algorithm, "" for none
	sum     string // its value (base64), "" when it comes in the trailer
	trailer bool   // the value comes in the trailer
}

// expectOf reads what r's body must hash to, for a payload signed as
// payload (x-amz-content-sha256); trailer names the trailer's headers.
func expectOf(r *http.Request, payload string, trailer []string) (expect, error) {
	var e expect
	if vs, ok := r.Header["Content-Md5"]; ok {
		b, err := base64.StdEncoding.DecodeString(vs[0]) // an empty one is no MD5
		if err != nil || len(b) != md5.Size {
			return e, errBadMD5
		}
		e.md5 = b
	}
	switch payload {
	case unsignedPayload, streamingSigned, streamingSignedTrailer, streamingUnsigned:
	default:
		b, err := hex.DecodeString(payload)
		if err != nil || len(b) != sha256.Size {
			return e, errBadContentSHA
		}
		e.sha256 = b
	}
	for alg := range checksumAlgs {
		if v := r.Header.Get(checksumHeader(alg)); v != "" {
			if e.alg != "" || !validChecksum(alg, v) {
				return e, errBadChecksum
			}
			e.alg, e.sum = alg, v
		}
	}
	for _, k := range trailer {
		alg, ok := strings.CutPrefix(k, "x-amz-checksum-")
		if _, known := checksumAlgs[alg]; !ok || !known || e.alg != "" {
			return e, errBadChecksum
		}
		e.alg, e.trailer = alg, true
	}
	if e.alg == "" {
		// Asked for without a value (a part of an upload created with
		// an algorithm): computed, and answered.
		alg := strings.ToLower(r.Header.Get("X-Amz-Sdk-Checksum-Algorithm"))
		if alg == "" {
			alg = strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm"))
		}
		if _, ok := checksumAlgs[alg]; ok {
			e.alg = alg
		}
	}
	return e, nil
}

// validChecksum reports whether v is base64 of a value of alg's size.
func validChecksum(alg, v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(b) == checksumAlgs[alg]().Size()
}

// checked is a body checked as it is read against what it must hash to:
// at its end, a body that differs ends with the error of its kind
// instead of io.EOF.
type checked struct {
	r       io.Reader
	e       expect
	chunks  *chunked // the decoder, for the trailer's value; nil for none
	md5     hash.Hash
	sha256  hash.Hash // nil: the caller compares the SHA-256 itself
	sum     hash.Hash
	n       int64
	err     error
	checked string // the checksum computed, base64, once the body ended
}

// newChecked returns body checked against e. With ownSHA the payload's
// SHA-256 is left to the caller, who computes it anyway (the write
// pipeline): see SHA256Mismatch. With etag the SHA-256 is computed even
// when the request states none, for ETag.
func newChecked(body io.Reader, e expect, chunks *chunked, ownSHA, etag bool) *checked {
	c := &checked{r: body, e: e, chunks: chunks}
	if e.md5 != nil {
		c.md5 = md5.New()
	}
	if e.sha256 != nil && !ownSHA || etag {
		c.sha256 = sha256.New()
	}
	if e.alg != "" {
		c.sum = checksumAlgs[e.alg]()
	}
	return c
}

func (c *checked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if c.md5 != nil {
			c.md5.Write(p[:n])
		}
		if c.sha256 != nil {
			c.sha256.Write(p[:n])
		}
		if c.sum != nil {
			c.sum.Write(p[:n])
		}
		c.n += int64(n)
	}
	if err == io.EOF {
		if ferr := c.finish(); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// finish compares what the body hashed to with what it must.
func (c *checked) finish() error {
	if c.e.md5 != nil && string(c.md5.Sum(nil)) != string(c.e.md5) {
		return errBadDigest
	}
	if c.e.sha256 != nil && c.sha256 != nil && string(c.sha256.Sum(nil)) != string(c.e.sha256) {
		return errContentSHA
	}
	if c.sum == nil {
		return nil
	}
	c.checked = base64.StdEncoding.EncodeToString(c.sum.Sum(nil))
	want := c.e.sum
	if c.e.trailer {
		v, ok := c.chunks.Trailer(checksumHeader(c.e.alg))
		if !ok || !validChecksum(c.e.alg, v) {
			return errTrailer
		}
		want = v
	}
	if want != "" && want != c.checked {
		return errBadDigest
	}
	return nil
}

// ETag returns the ETag of a part, the body read (newChecked with etag):
// the first 160 bits of its SHA-256, in hex, quoted. Not S3's MD5, which
// would cost a second digest of every byte on the server's cores; no
// client takes a part's ETag for anything but a token to send back, and
// one that compares an ETag with its own MD5 does so only when it has an
// MD5's length.
func (c *checked) ETag() string { return `"` + hex.EncodeToString(c.sha256.Sum(nil)[:20]) + `"` }

// SHA256Mismatch reports whether sum, the payload's SHA-256 computed by
// the caller, differs from x-amz-content-sha256.
func (c *checked) SHA256Mismatch(sum []byte) bool {
	return c.e.sha256 != nil && string(sum) != string(c.e.sha256)
}

// Answer sets on h the checksum computed, when the request named one.
func (c *checked) Answer(h http.Header) {
	if c.checked != "" {
		h.Set(checksumHeader(c.e.alg), c.checked)
	}
}
