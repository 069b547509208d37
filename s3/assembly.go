package s3

import (
	"context"
	"fmt"

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
