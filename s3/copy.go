package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// A part of a multipart upload made of bytes the bucket already holds is
// copied by the server (UploadPartCopy) when they are one range of one
// object; bytes of several objects, or any bytes on a server that
// refuses UploadPartCopy (found at its first refusal, then never asked
// again), pass through this process instead: ranged GETs, sent on as the
// part as they arrive, buffered nowhere.

// Span is a range of the bytes of an object of the bucket.
type Span struct {
	// Key is the object's key (the Store's prefix included).
	Key string
	// Off and N are the range's offset and length.
	Off, N int64
	// ETag, when not empty, is the object's version the bytes must be
	// of (x-amz-copy-source-if-match, If-Match).
	ETag string
}

// PlacePart makes part num of the multipart upload id at key the bytes
// of spans, in order, and returns the part's ETag: copied by the server
// where it can (one span, UploadPartCopy taken), otherwise read and sent
// through this process.
func (s *Store) PlacePart(ctx context.Context, key, id string, num int32, spans []Span) (string, error) {
	var n int64
	for _, sp := range spans {
		if sp.N <= 0 {
			return "", fmt.Errorf("part %d of %s: an empty range", num, key)
		}
		n += sp.N
	}
	if len(spans) == 1 && !s.noCopy.Load() {
		etag, err := s.uploadPartCopy(ctx, key, id, num, spans[0])
		if !refusedNotImplemented(err) {
			return etag, err
		}
		s.noCopy.Store(true)
	}
	body := &spanReader{ctx: ctx, s: s, spans: spans}
	defer body.Close()
	out, err := s.api.UploadPart(ctx, &awss3.UploadPartInput{
		Bucket:        &s.bucket,
		Key:           &key,
		UploadId:      &id,
		PartNumber:    aws.Int32(num),
		Body:          body,
		ContentLength: aws.Int64(n),
	}, s.streamed())
	if err != nil {
		return "", cmp.Or(body.err, err)
	}
	return aws.ToString(out.ETag), nil
}

// uploadPartCopy is one UploadPartCopy of sp as part num.
func (s *Store) uploadPartCopy(ctx context.Context, key, id string, num int32, sp Span) (string, error) {
	out, err := s.api.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{
		Bucket:            &s.bucket,
		Key:               &key,
		UploadId:          &id,
		PartNumber:        aws.Int32(num),
		CopySource:        aws.String(copySource(s.bucket, sp.Key)),
		CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", sp.Off, sp.Off+sp.N-1)),
		CopySourceIfMatch: nonEmpty(sp.ETag),
	})
	if err != nil {
		return "", err
	}
	if out.CopyPartResult == nil {
		return "", errors.New("UploadPartCopy answered no ETag")
	}
	return aws.ToString(out.CopyPartResult.ETag), nil
}

// spanReader reads spans in order, each by a ranged GET made when the
// reading reaches it.
type spanReader struct {
	ctx   context.Context
	s     *Store
	spans []Span
	body  io.ReadCloser // of spans[0], once asked for
	left  int64         // bytes of spans[0] still to read
	err   error         // a failure of a GET, for the caller
}

func (r *spanReader) Read(p []byte) (int, error) {
	for len(r.spans) > 0 {
		if r.body == nil {
			sp := r.spans[0]
			out, err := r.s.api.GetObject(r.ctx, &awss3.GetObjectInput{
				Bucket:  &r.s.bucket,
				Key:     &sp.Key,
				Range:   aws.String(fmt.Sprintf("bytes=%d-%d", sp.Off, sp.Off+sp.N-1)),
				IfMatch: nonEmpty(sp.ETag),
			})
			if err != nil {
				r.err = mapErr(sp.Key, err)
				return 0, r.err
			}
			r.body, r.left = out.Body, sp.N
		}
		if r.left == 0 {
			r.body.Close()
			r.body, r.spans = nil, r.spans[1:]
			continue
		}
		k, err := r.body.Read(p[:min(int64(len(p)), r.left)])
		r.left -= int64(k)
		switch {
		case err == io.EOF && r.left > 0:
			r.err = fmt.Errorf("%s: the range ended %d bytes short", r.spans[0].Key, r.left)
			return k, r.err
		case err != nil && err != io.EOF:
			r.err = err
			return k, err
		}
		if k > 0 {
			return k, nil
		}
	}
	return 0, io.EOF
}

// Close closes the GET in progress.
func (r *spanReader) Close() error {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	return nil
}
