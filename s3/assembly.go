package s3

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"largo"
)

// An assembly is a multipart upload begun at a file's own key, whose
// parts someone else places while the file's pieces arrive (the staging
// of parallel resumable uploads copies each finished piece in as its
// parts, server-side), so that finishing the file is one
// CompleteMultipartUpload, whatever its size: no copy of the whole into
// place. It is invisible until completed; it is recorded like the store's
// own multipart uploads, so that Sweep aborts one left behind.

var _ largo.AssemblyAdopter = (*Store)(nil)

// BeginAssembly begins an assembly of the file name and returns the key
// its parts go to and its upload ID.
func (s *Store) BeginAssembly(ctx context.Context, name string) (key, id string, err error) {
	key = s.key(name)
	out, err := s.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return "", "", mapErr(name, err)
	}
	id = aws.ToString(out.UploadId)
	if err := s.recordUpload(ctx, key, id); err != nil {
		s.api.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: &id})
		return "", "", err
	}
	return key, id, nil
}

// AdoptAssembly implements largo.AssemblyAdopter: the assembly id of
// name, whose parts hold opt.Size bytes in all, becomes an Upload that
// takes no bytes; Commit completes it with every part it holds, in order,
// under the condition, and Abort leaves it to whoever began it.
func (s *Store) AdoptAssembly(ctx context.Context, name, id string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkTarget(ctx, name, opt); err != nil {
		return nil, err
	}
	u := s.newUpload(ctx, name, opt)
	mp := &multipart{u: u, id: id}
	var n int64
	pages := awss3.NewListPartsPaginator(s.api, &awss3.ListPartsInput{Bucket: &s.bucket, Key: &u.key, UploadId: &id})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			u.cancel()
			return nil, mapErr(name, err)
		}
		for _, p := range page.Parts {
			mp.parts = append(mp.parts, types.CompletedPart{PartNumber: p.PartNumber, ETag: p.ETag})
			n += aws.ToInt64(p.Size)
		}
	}
	if opt.Size >= 0 && n != opt.Size || len(mp.parts) == 0 {
		u.cancel()
		return nil, fmt.Errorf("%s: the assembly holds %d bytes in %d parts, not %d", name, n, len(mp.parts), opt.Size)
	}
	u.n = n
	u.send = &assemblySender{mp: mp}
	return u, nil
}

// assemblySender commits an adopted assembly.
type assemblySender struct{ mp *multipart }

func (a *assemblySender) write([]byte) error {
	return fmt.Errorf("an adopted assembly takes no bytes")
}

func (a *assemblySender) finish(ctx context.Context, cond largo.Condition) (written, error) {
	return a.mp.complete(ctx, cond)
}

// abort leaves the assembly as it is: it belongs to whoever began it (the
// staging), which may adopt it again after a failure of the server's
// (the final request sent again) and aborts it when it gives the upload
// up; one forgotten is aborted by Sweep.
func (a *assemblySender) abort() {}

// WriteAssemblyPart sends size bytes of r, read once as they arrive, as
// the part number n of the assembly id of the file name, streamed as the
// store's own writes are (unsigned aws-chunked with a CRC32 trailer where
// the server takes one, tried once), and returns the part's ETag. A part
// sent again under its number replaces the earlier one; a body that fails
// before its end leaves none.
// Each part renews the assembly's record, so that Sweep aborts an
// assembly only once it has received nothing for as long as its expiry.
func (s *Store) WriteAssemblyPart(ctx context.Context, name, id string, n int32, r io.Reader, size int64) (string, error) {
	key := s.key(name)
	out, err := s.api.UploadPart(ctx, &awss3.UploadPartInput{
		Bucket:        &s.bucket,
		Key:           &key,
		UploadId:      &id,
		PartNumber:    aws.Int32(n),
		Body:          r,
		ContentLength: aws.Int64(size),
	}, s.streamed())
	if err != nil {
		return "", mapErr(name, err)
	}
	s.recordUpload(ctx, key, id) // a failure only shortens its life
	return aws.ToString(out.ETag), nil
}

// AbortAssembly discards the assembly id of the file name and its parts.
// One that is gone already (completed, aborted) is no error.
func (s *Store) AbortAssembly(ctx context.Context, name, id string) error {
	key := s.key(name)
	_, err := s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: &id})
	if err != nil && !errors.Is(mapErr(name, err), largo.ErrNotFound) {
		return err
	}
	s.forgetUpload(id)
	return nil
}
