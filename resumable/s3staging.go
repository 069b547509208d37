package resumable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/tus/tusd/v2/pkg/s3store"
)

// S3Config locates the staging of a bucket: the client of the served
// store, and where under its prefix the uploads go.
type S3Config struct {
	// Client is the served store's S3 client (see s3.Store.Shared): the
	// staging shares its endpoint, region, credentials and connections.
	Client *s3.Client
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is the key prefix of the staged uploads, without a trailing
	// slash: the served prefix followed by largo.StateDir and "tus".
	Prefix string
	// Staged is Prefix as a name of the served store (largo.StateDir and
	// "tus"), for largo.Adopter.
	Staged string
	// PartSize is the preferred size of the parts an upload's chunks are
	// cut into; zero means 16 MiB. Chunks smaller than S3's minimum part
	// (5 MiB) wait in an object of their own for the next chunk.
	PartSize int64
	// PartConcurrency is how many parts are sent to the bucket at once,
	// across all uploads; zero means 2.
	PartConcurrency int
	// TempDir is where the parts of a chunk are written before they are
	// sent; empty means the system's temporary folder.
	TempDir string
}

// s3Staging is tusd's S3 store with what largo keeps beside it. Per
// upload, under Prefix: the bytes, in a multipart upload to ID (completed
// into the object ID when the last byte is in), ID.info (tusd's FileInfo),
// ID.part (a chunk's tail too short to be a part, until more arrives) and
// ID.sha256 (the hash state). The upload's tus ID is its object ID, a plus
// and the multipart upload's ID.
type s3Staging struct {
	s3store.S3Store
	api    *s3.Client
	bucket string
	prefix string // ends with a slash
	staged string
}

var _ Staging = (*s3Staging)(nil)

// S3Staging keeps uploads in a bucket, where every server serving the
// bucket finds them. The bytes of a PATCH are cut into parts on local disk
// (cfg.TempDir) before they go to the bucket, at most two parts per PATCH
// in progress besides the cfg.PartConcurrency parts being sent.
func S3Staging(cfg S3Config) (Staging, error) {
	if cfg.Client == nil || cfg.Bucket == "" || cfg.Prefix == "" {
		return nil, errors.New("S3 staging: client, bucket and prefix are required")
	}
	api := cfg.Client
	st := s3store.New(cfg.Bucket, api)
	st.ObjectPrefix = strings.TrimSuffix(cfg.Prefix, "/")
	st.PreferredPartSize = cfg.PartSize
	if st.PreferredPartSize == 0 {
		st.PreferredPartSize = 16 << 20
	}
	st.MaxBufferedParts = 1
	st.TemporaryDirectory = cfg.TempDir
	conc := cfg.PartConcurrency
	if conc <= 0 {
		conc = 2
	}
	st.SetConcurrentPartUploads(conc)
	return &s3Staging{S3Store: st, api: api, bucket: cfg.Bucket, prefix: st.ObjectPrefix + "/", staged: cfg.Staged}, nil
}

// objectID is the part of a tus ID before the plus: the key of the
// upload's objects under the prefix.
func objectID(id string) (obj, multipart string) {
	obj, multipart, _ = strings.Cut(id, "+")
	return obj, multipart
}

func (s *s3Staging) key(id, suffix string) *string {
	obj, _ := objectID(id)
	return aws.String(s.prefix + obj + suffix)
}

func (s *s3Staging) Staged(id string) string {
	obj, _ := objectID(id)
	return s.staged + "/" + obj
}

func (s *s3Staging) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.key(id, "")})
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// Remove aborts the upload's multipart upload, if it is still one, and
// removes its objects.
func (s *s3Staging) Remove(ctx context.Context, id string) error {
	var errs []error
	if _, mp := objectID(id); mp != "" {
		_, err := s.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: s.key(id, ""), UploadId: &mp})
		if err != nil && !notFound(err) {
			errs = append(errs, err)
		}
	}
	var objs []types.ObjectIdentifier
	for _, suffix := range []string{"", ".info", ".part", ".sha256"} {
		objs = append(objs, types.ObjectIdentifier{Key: s.key(id, suffix)})
	}
	out, err := s.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.bucket, Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, e := range out.Errors {
			if aws.ToString(e.Code) != "NoSuchKey" {
				errs = append(errs, fmt.Errorf("removing %s: %s", aws.ToString(e.Key), aws.ToString(e.Message)))
			}
		}
	}
	return errors.Join(errs...)
}

// notFound reports whether err is S3's answer for something that does not
// exist (an object, a multipart upload).
func notFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NoSuchUpload", "NotFound":
			return true
		}
	}
	return false
}

// Idle yields the uploads with no activity since before: their objects
// and multipart upload all older, and no part sent since either (a long
// PATCH through another server writes parts, not objects).
func (s *s3Staging) Idle(ctx context.Context, before time.Time) iter.Seq2[IdleUpload, error] {
	return func(yield func(IdleUpload, error) bool) {
		ups := map[string]*IdleUpload{} // by object ID
		get := func(obj string) *IdleUpload {
			if ups[obj] == nil {
				ups[obj] = &IdleUpload{ID: obj + "+"}
			}
			return ups[obj]
		}
		objects := s3.NewListObjectsV2Paginator(s.api, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix)})
		for objects.HasMorePages() {
			page, err := objects.NextPage(ctx)
			if err != nil {
				yield(IdleUpload{}, err)
				return
			}
			for _, o := range page.Contents {
				name := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
				obj, _, _ := strings.Cut(name, ".")
				if obj == "" || strings.Contains(obj, "/") {
					continue
				}
				up := get(obj)
				up.Last = maxTime(up.Last, aws.ToTime(o.LastModified))
				if !strings.HasSuffix(name, ".info") && !strings.HasSuffix(name, ".sha256") {
					up.Size += aws.ToInt64(o.Size)
				}
			}
		}
		mps := s3.NewListMultipartUploadsPaginator(s.api, &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix)})
		for mps.HasMorePages() {
			page, err := mps.NextPage(ctx)
			if err != nil {
				yield(IdleUpload{}, err)
				return
			}
			for _, m := range page.Uploads {
				obj := strings.TrimPrefix(aws.ToString(m.Key), s.prefix)
				if strings.Contains(obj, "/") {
					continue
				}
				up := get(obj)
				up.ID = obj + "+" + aws.ToString(m.UploadId)
				up.Last = maxTime(up.Last, aws.ToTime(m.Initiated))
			}
		}
		for _, up := range ups {
			if !up.Last.Before(before) {
				continue
			}
			if err := s.addParts(ctx, up); err != nil {
				if !yield(IdleUpload{}, err) {
					return
				}
				continue
			}
			if up.Last.Before(before) && !yield(*up, nil) {
				return
			}
		}
	}
}

// addParts counts the parts an upload's multipart upload holds in its size
// and activity.
func (s *s3Staging) addParts(ctx context.Context, up *IdleUpload) error {
	_, mp := objectID(up.ID)
	if mp == "" {
		return nil
	}
	parts := s3.NewListPartsPaginator(s.api, &s3.ListPartsInput{Bucket: &s.bucket, Key: s.key(up.ID, ""), UploadId: &mp})
	for parts.HasMorePages() {
		page, err := parts.NextPage(ctx)
		if notFound(err) {
			return nil // completed or aborted meanwhile
		}
		if err != nil {
			return err
		}
		for _, p := range page.Parts {
			up.Size += aws.ToInt64(p.Size)
			up.Last = maxTime(up.Last, aws.ToTime(p.LastModified))
		}
	}
	return nil
}

// Pending is 0: the staging is shared, and each server counts the bytes
// that pass through it.
func (s *s3Staging) Pending(context.Context) (int64, error) { return 0, nil }

func (s *s3Staging) LoadHash(ctx context.Context, id string) []byte {
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: s.key(id, ".sha256")})
	if err != nil {
		return nil
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<10))
	if err != nil {
		return nil
	}
	return b
}

func (s *s3Staging) SaveHash(ctx context.Context, id string, state []byte) error {
	if state == nil {
		_, err := s.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: s.key(id, ".sha256")})
		return err
	}
	_, err := s.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           s.key(id, ".sha256"),
		Body:          bytes.NewReader(state),
		ContentLength: aws.Int64(int64(len(state))),
	})
	return err
}
