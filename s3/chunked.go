package s3

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// chunkedTrailer is the option of a request whose body is read once, as
// it arrives (a pipe), on a server that takes checksum trailers. Such a
// body goes in the aws-chunked encoding, unsigned, with a CRC32 trailer
// (STREAMING-UNSIGNED-PAYLOAD-TRAILER), and the request is tried once,
// since the body cannot be sent again.
//
// Not signed: a signature of the payload would be needed before its first
// byte. Not UNSIGNED-PAYLOAD either, although it would do on Amazon S3:
// some servers (versitygw 1.8) store the bytes of a request whose
// connection ends before its Content-Length, which would make an upload
// aborted before its held-back last byte visible. The chunked framing ends
// with a zero-length chunk and the trailer, so a server can tell a body
// cut short, and the CRC32 guards the bytes on a connection without TLS.
// The SDK sends the same encoding itself for PutObject over HTTPS, but
// refuses it without TLS.
func chunkedTrailer(o *awss3.Options) {
	o.Retryer = aws.NopRetryer{}
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		_, err := stack.Finalize.Swap(payloadHashID, chunkedPayload{})
		return err
	})
}

// unsignedStream is the option of a request whose body is read once, as
// it arrives, on a server that refuses checksum trailers
// (ChecksumOff): the body goes as it is, its payload announced as
// UNSIGNED-PAYLOAD, and the request is tried once. Since a server may
// keep a body cut short (see chunkedTrailer), such a body is only ever
// sent as the part of a multipart upload, which an aborted write never
// completes.
func unsignedStream(o *awss3.Options) {
	o.Retryer = aws.NopRetryer{}
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		_, err := stack.Finalize.Swap(payloadHashID, unsignedPayload{})
		return err
	})
}

// streamed returns the option of a request whose body is read once, as
// it arrives: chunkedTrailer or unsignedStream, as the server takes.
func (s *Store) streamed() func(*awss3.Options) {
	if s.trailers.Load() {
		return chunkedTrailer
	}
	return unsignedStream
}

// payloadHashID is the ID of the SDK's middleware that sets the payload
// hash of the signature, which chunkedPayload replaces.
var payloadHashID = (&v4.ComputePayloadSHA256{}).ID()

// The headers and values of an unsigned aws-chunked body with a trailer.
const (
	streamingTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	crcTrailer       = "x-amz-checksum-crc32"
)

// chunkedPayload is a finalize middleware that sends the request's body
// (of a known length) as a chunkedBody.
type chunkedPayload struct{}

func (chunkedPayload) ID() string { return payloadHashID }

func (chunkedPayload) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("unexpected request type %T", in.Request)
	}
	n, stream := req.ContentLength, req.GetStream()
	if n <= 0 || stream == nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, errors.New("a streamed body needs a known, non-zero length")
	}
	body := newChunkedBody(stream, n)
	req, err := req.SetStream(body)
	if err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	req.ContentLength = body.encodedLen()
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.FormatInt(n, 10))
	req.Header.Set("X-Amz-Trailer", crcTrailer)
	in.Request = req
	return next.HandleFinalize(v4.SetPayloadHash(ctx, streamingTrailer), in)
}

// unsignedPayload is a finalize middleware that signs a request without
// its payload's hash.
type unsignedPayload struct{}

func (unsignedPayload) ID() string { return payloadHashID }

func (unsignedPayload) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	return next.HandleFinalize(v4.SetPayloadHash(ctx, unsignedPayloadHash), in)
}

// unsignedPayloadHash is the payload hash of a request signed without
// its payload.
const unsignedPayloadHash = "UNSIGNED-PAYLOAD"

// chunkedBody is n bytes of r in the aws-chunked encoding, as one chunk
// and the trailer of their CRC32:
//
//	HEX(n)\r\n
//	n bytes\r\n
//	0\r\n
//	x-amz-checksum-crc32:BASE64\r\n
//	\r\n
//
// It holds nothing but the framing: the payload passes through as it is
// read.
type chunkedBody struct {
	r     io.Reader
	n     int64
	left  int64  // payload bytes still to pass through
	frame []byte // framing to send before the next payload byte, or at the end
	crc   uint32
	done  bool // the trailer is made
}

func newChunkedBody(r io.Reader, n int64) *chunkedBody {
	return &chunkedBody{r: r, n: n, left: n, frame: []byte(strconv.FormatInt(n, 16) + "\r\n")}
}

// trailerLen is the length of everything after the payload.
const trailerLen = len("\r\n0\r\n"+crcTrailer+":") + 8 + len("\r\n\r\n") // 8: the base64 of 4 bytes

// encodedLen is the length of the whole encoded body.
func (b *chunkedBody) encodedLen() int64 {
	return int64(len(strconv.FormatInt(b.n, 16))+2) + b.n + int64(trailerLen)
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if len(b.frame) > 0 {
		k := copy(p, b.frame)
		b.frame = b.frame[k:]
		return k, nil
	}
	if b.left == 0 {
		if b.done {
			return 0, io.EOF
		}
		b.done = true
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], b.crc)
		b.frame = []byte("\r\n0\r\n" + crcTrailer + ":" + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		return b.Read(p)
	}
	k, err := b.r.Read(p[:min(int64(len(p)), b.left)])
	b.crc = crc32.Update(b.crc, crc32.IEEETable, p[:k])
	b.left -= int64(k)
	switch {
	case err == io.EOF && b.left > 0:
		return k, io.ErrUnexpectedEOF
	case err == io.EOF:
		err = nil
	}
	return k, err
}
