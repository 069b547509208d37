package s3api

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"strings"
)

// An aws-chunked body (Content-Encoding: aws-chunked) frames the payload
// in chunks, each announced by its length in hex:
//
//	10000;chunk-signature=<64 hex>\r\n<65536 bytes>\r\n
//	...
//	0;chunk-signature=<64 hex>\r\n
//	x-amz-checksum-crc32:<base64>\r\n          (with a trailer)
//	x-amz-trailer-signature:<64 hex>\r\n       (signed trailer)
//	\r\n
//
// Under STREAMING-AWS4-HMAC-SHA256-PAYLOAD each chunk's signature signs
// its bytes and the signature before it, the first the request's own, so
// that a chunk cannot be dropped, replayed or moved; each is checked as
// its last byte arrives, before the next chunk's first. Under the
// -TRAILER variants a trailer follows the last chunk, announced by
// x-amz-trailer (a checksum of the payload, checked at the end of the
// body: checksum.go), signed under the signed variant and not under
// STREAMING-UNSIGNED-PAYLOAD-TRAILER, whose chunks carry no signature
// either. The decoder holds one line of framing at a time, never a
// chunk.

// Bounds of the framing.
const (
	maxChunkLine = 4 << 10 // a chunk's header line, a trailer's line
	maxTrailers  = 8       // lines of a trailer
)

// chunked decodes an aws-chunked body.
type chunked struct {
	r    *bufio.Reader
	sig  *signature // nil: unsigned chunks
	prev string     // the signature the next one chains to
	// signedTrailer: the trailer carries a signature of its own.
	signedTrailer bool
	// trailer names the trailer's headers x-amz-trailer announced; nil
	// for a body without a trailer.
	trailer []string
	left    int64     // bytes of the current chunk still to read
	claimed string    // the current chunk's signature
	h       hash.Hash // of the current chunk's bytes (signed)
	got     int64     // payload bytes decoded
	want    int64     // x-amz-decoded-content-length
	values  map[string]string
	err     error
	done    bool
}

// newChunked returns the decoder of body, of want payload bytes, signed
// by sig's chunks when sig is not nil; trailer names the headers the
// trailer must carry (nil: none), signed when signedTrailer.
func newChunked(body io.Reader, want int64, sig *signature, trailer []string, signedTrailer bool) *chunked {
	c := &chunked{r: bufio.NewReaderSize(body, maxChunkLine), sig: sig, trailer: trailer, signedTrailer: signedTrailer, want: want}
	if sig != nil {
		c.prev = sig.seed
		c.h = sha256.New()
	}
	return c
}

// Read returns the payload's bytes; a framing, a signature or the
// length that fails ends it with that error.
func (c *chunked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
		if c.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if c.h != nil {
			c.h.Write(p[:n])
		}
		c.left -= int64(n)
		c.got += int64(n)
		if c.left == 0 {
			if cerr := c.endChunk(); cerr != nil {
				c.err = cerr
				return n, nil // the error comes with the next Read
			}
		}
	}
	if err == io.EOF {
		err = errChunk // the framing was cut short
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// next reads the next chunk's header, or the last chunk and the
// trailer.
func (c *chunked) next() error {
	line, err := c.line()
	if err != nil {
		return err
	}
	size, ext, _ := strings.Cut(line, ";")
	n, err := strconv.ParseInt(size, 16, 64)
	if err != nil || n < 0 || len(size) > 16 {
		return errChunk
	}
	if c.sig != nil {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok || !validSignature(sig) {
			return errChunk
		}
		c.claimed = sig
	}
	if n > c.want-c.got {
		return errDecodedLength
	}
	if n > 0 {
		c.left = n
		return nil
	}
	// The last chunk, of no bytes: signed like any.
	if err := c.check(); err != nil {
		return err
	}
	if c.trailer != nil {
		if err := c.readTrailer(); err != nil {
			return err
		}
	} else if line, err := c.line(); err != nil || line != "" {
		return errChunk
	}
	if c.got != c.want {
		return errDecodedLength
	}
	c.done = true
	return nil
}

// endChunk ends the current chunk: its CRLF, and its signature.
func (c *chunked) endChunk() error {
	line, err := c.line()
	if err != nil || line != "" {
		return errChunk
	}
	return c.check()
}

// check verifies the signature of the chunk just read.
func (c *chunked) check() error {
	if c.sig == nil {
		return nil
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.sig.date + "\n" + c.sig.scope + "\n" + c.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.h.Sum(nil))
	want := hex.EncodeToString(hmacSHA256(c.sig.key, sts))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(c.claimed))) {
		return errChunkSig
	}
	c.prev = want
	c.h.Reset()
	return nil
}

// readTrailer reads the trailer: the headers x-amz-trailer announced,
// and its signature when signed, up to the empty line that ends the
// body.
func (c *chunked) readTrailer() error {
	c.values = map[string]string{}
	var canonical strings.Builder
	var sig string
	for i := 0; ; i++ {
		line, err := c.line()
		if err != nil {
			return errTrailer
		}
		if line == "" {
			break
		}
		if i >= maxTrailers {
			return errTrailer
		}
		k, v, ok := strings.Cut(line, ":")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok {
			return errTrailer
		}
		if k == "x-amz-trailer-signature" {
			sig = v
			continue
		}
		c.values[k] = v
		canonical.WriteString(k + ":" + v + "\n")
	}
	for _, k := range c.trailer {
		if _, ok := c.values[k]; !ok {
			return errTrailer
		}
	}
	if !c.signedTrailer {
		return nil
	}
	if !validSignature(sig) {
		return errTrailer
	}
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.sig.date + "\n" + c.sig.scope + "\n" + c.prev + "\n" + sha256Hex(canonical.String())
	want := hex.EncodeToString(hmacSHA256(c.sig.key, sts))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		return errChunkSig
	}
	return nil
}

// line reads one line of framing, without its CRLF (or LF).
func (c *chunked) line() (string, error) {
	b, err := c.r.ReadSlice('\n')
	if err != nil {
		return "", errChunk
	}
	b = bytes.TrimSuffix(b[:len(b)-1], []byte("\r"))
	return string(b), nil
}

// Trailer returns the value of the trailer's header k, once the body has
// been read to its end.
func (c *chunked) Trailer(k string) (string, bool) {
	v, ok := c.values[k]
	return v, ok
}
