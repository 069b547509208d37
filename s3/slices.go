package s3

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
	"largo/slicecache"
)

// open returns the file of the object o of name: read through the slice
// cache when the Store has one and the object has an ETag to tell its
// versions apart (an object without one could change under the same
// slices), else straight from the bucket.
func (s *Store) open(ctx context.Context, name string, o object) largo.File {
	info := fileInfo(name, o)
	if s.slices == nil || info.ETag == "" {
		return newFile(ctx, s, name, o)
	}
	key := s.key(name)
	obj := slicecache.Object{Key: s.bucket + "/" + key, Version: info.ETag, Size: o.size}
	return &slicedFile{Reader: s.slices.Open(ctx, obj, s.fillSlice(name, key, info.ETag)), name: name, info: info}
}

// slicedFile is an object read through the slice cache: its bytes come
// from slices on the local disk, which the transfer sends by sendfile
// (largo.SliceFile), each fetched from the bucket once.
type slicedFile struct {
	*slicecache.Reader
	name string
	info largo.Info
}

var _ largo.SliceFile = (*slicedFile)(nil)

// Info implements largo.File.
func (f *slicedFile) Info() largo.Info { return f.info }

// String returns the file's name, for logs.
func (f *slicedFile) String() string { return f.name }

// fillSlice returns what fetches a slice of the object at key: a ranged
// GET conditional on the ETag seen at Open, so that a slice of another
// version is never stored under this one's.
func (s *Store) fillSlice(name, key, etag string) slicecache.Fill {
	return func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		out, err := s.api.GetObject(ctx, &awss3.GetObjectInput{
			Bucket:  &s.bucket,
			Key:     &key,
			Range:   aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
			IfMatch: &etag,
		})
		if err != nil {
			err = mapErr(name, err)
			if errors.Is(err, largo.ErrPrecondition) {
				err = fmt.Errorf("changed since it was opened: %w", err)
			}
			return nil, err
		}
		if start, ok := rangeStart(aws.ToString(out.ContentRange)); !ok || start != off {
			out.Body.Close()
			return nil, fmt.Errorf("%s: asked the store for bytes from %d, got Content-Range %q", name, off, aws.ToString(out.ContentRange))
		}
		return out.Body, nil
	}
}
