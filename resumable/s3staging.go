package resumable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/tus/tusd/v2/pkg/s3store"
	"golang.org/x/sync/errgroup"

	"largo/internal/keylock"
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
	// Assembler, when not nil, begins assemblies of files at their own
	// keys (s3.Store.BeginAssembly), into which placed partials are
	// copied as they end (s3assembly.go); nil joins them at the final.
	Assembler assembler
}

// s3Staging is tusd's S3 store with what largo keeps beside it. Per
// upload, under Prefix: the bytes, in a multipart upload to ID (completed
// into the object ID when the last byte is in), ID.info (tusd's FileInfo),
// ID.part (a chunk's tail too short to be a part, until more arrives) and
// ID.sha256 (the hash state). The upload's tus ID is its object ID, a plus
// and the multipart upload's ID.
type s3Staging struct {
	s3store.S3Store
	api     *s3.Client
	bucket  string
	prefix  string // ends with a slash
	staged  string
	tempDir string
	asm     assembler
	locks   keylock.Set // by group, held while its assembly is made or used
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
	return &s3Staging{S3Store: st, api: api, bucket: cfg.Bucket, prefix: st.ObjectPrefix + "/", staged: cfg.Staged, tempDir: cfg.TempDir, asm: cfg.Assembler}, nil
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
	if err := s.dropAssembly(ctx, id); err != nil {
		errs = append(errs, err)
	}
	if _, mp := objectID(id); mp != "" {
		_, err := s.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: s.key(id, ""), UploadId: &mp})
		if err != nil && !notFound(err) {
			errs = append(errs, err)
		}
	}
	var objs []types.ObjectIdentifier
	for _, suffix := range []string{"", ".info", ".part", ".sha256", ".asm"} {
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
				if !strings.HasSuffix(name, ".info") && !strings.HasSuffix(name, ".sha256") && !strings.HasSuffix(name, ".asm") {
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
	return s.putRecord(ctx, s.key(id, ".sha256"), state, false)
}

// putRecord writes a small object of the staging's own; with onlyNew,
// only where there is none (If-None-Match: *).
func (s *s3Staging) putRecord(ctx context.Context, key *string, b []byte, onlyNew bool) error {
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}
	if onlyNew {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := s.api.PutObject(ctx, in)
	return err
}

// S3's limits on the parts of a multipart upload.
const (
	minPart   = 5 << 20 // the smallest part but the last
	maxCopy   = 5 << 30 // the largest part one UploadPartCopy makes
	smallJoin = 64 << 20
)

// ReadPart returns a finished partial's bytes from off on: its object's.
func (s *s3Staging) ReadPart(ctx context.Context, p part, off int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: s.key(p.ID, "")}
	if off > 0 {
		if off >= p.Size {
			return io.NopCloser(strings.NewReader("")), nil
		}
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := s.api.GetObject(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// Seal completes the multipart upload of each partial whose bytes are
// all in but that a crash left uncompleted, so that its object is there.
func (s *s3Staging) Seal(ctx context.Context, parts []part) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, p := range parts {
		g.Go(func() error {
			_, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: s.key(p.ID, "")})
			if err == nil || !notFound(err) {
				return err
			}
			if s.Assembly(ctx, p.ID) != "" {
				return nil // a final whose bytes are an assembly's
			}
			up, err := s.S3Store.GetUpload(ctx, p.ID)
			if err != nil {
				return err
			}
			return up.FinishUpload(ctx)
		})
	}
	return g.Wait()
}

// JoinsInPlace is false: every join makes a new object.
func (s *s3Staging) JoinsInPlace() bool { return false }

// Join copies the partials' objects, server-side, as the parts of the
// final upload's multipart upload (UploadPartCopy, a part per partial,
// or per 5 GiB of one), then completes it. S3 takes no part below 5 MiB
// but the last: partials that small are joined through largo, for a file
// of at most smallJoin bytes, and refused above.
func (s *s3Staging) Join(ctx context.Context, final string, parts []part, _ bool) error {
	small := false
	var total int64
	for i, p := range parts {
		small = small || p.Size < minPart && i < len(parts)-1
		total += p.Size
	}
	obj, mp := objectID(final)
	switch {
	case small && total > smallJoin:
		return errSmallParts
	case small:
		if err := s.joinThrough(ctx, obj, mp, parts); err != nil {
			return err
		}
	default:
		if err := s.copyParts(ctx, obj, mp, parts); err != nil {
			return err
		}
	}
	up, err := s.S3Store.GetUpload(ctx, final)
	if err != nil {
		return err
	}
	return up.FinishUpload(ctx)
}

// copyParts makes each partial one part of the multipart upload mp, or
// several of up to maxCopy bytes each, copied by the S3 server.
func (s *s3Staging) copyParts(ctx context.Context, obj, mp string, parts []part) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	n := int32(0)
	for _, p := range parts {
		if p.Size == 0 {
			continue
		}
		pieces := (p.Size + maxCopy - 1) / maxCopy
		each := (p.Size + pieces - 1) / pieces
		for off := int64(0); off < p.Size; off += each {
			n++
			num, rng := n, fmt.Sprintf("bytes=%d-%d", off, min(off+each, p.Size)-1)
			if n > maxParts {
				return errTooManyPart
			}
			g.Go(func() error {
				_, err := s.api.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
					Bucket:          &s.bucket,
					Key:             aws.String(s.prefix + obj),
					UploadId:        &mp,
					PartNumber:      aws.Int32(num),
					CopySource:      aws.String(copySource(s.bucket, *s.key(p.ID, ""))),
					CopySourceRange: aws.String(rng),
				})
				return err
			})
		}
	}
	return g.Wait()
}

// joinThrough sends the partials' bytes, read back, as the one part of
// the multipart upload mp: for a small file whose partials S3 will not
// take as parts. The part is spooled to a temporary file so that the
// request has a length and can be retried.
func (s *s3Staging) joinThrough(ctx context.Context, obj, mp string, parts []part) error {
	f, err := os.CreateTemp(s.tempDir, "largo-join-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var n int64
	for _, p := range parts {
		rc, err := s.ReadPart(ctx, p, 0)
		if err != nil {
			return err
		}
		m, err := io.Copy(f, rc)
		rc.Close()
		if err != nil {
			return err
		}
		n += m
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = s.api.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.prefix + obj),
		UploadId:      &mp,
		PartNumber:    aws.Int32(1),
		Body:          f,
		ContentLength: aws.Int64(n),
	})
	return err
}

// copySource is the x-amz-copy-source of key in bucket: its path,
// percent-encoded but for the slashes.
func copySource(bucket, key string) string {
	var b strings.Builder
	b.WriteString(bucket)
	for elem := range strings.SplitSeq(key, "/") {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(elem))
	}
	return b.String()
}
