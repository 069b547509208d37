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
	// PartSize is the size of the parts an upload's chunks are cut
	// into; zero means 16 MiB. Every part but an upload's last has that
	// size, as some servers require (Cloudflare R2): a chunk's tail
	// smaller than a part waits in an object of its own for the next
	// chunk.
	PartSize int64
	// PartConcurrency is how many parts are sent to the bucket at once,
	// across all uploads; zero means 2.
	PartConcurrency int
	// TempDir is where the parts of a chunk are written before they are
	// sent; empty means the system's temporary folder.
	TempDir string
	// Assembler is the served store (s3.Store), which begins assemblies
	// of files at their own keys, into which placed partials are copied
	// as they end (s3assembly.go), and places the parts of joins.
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
	api      *s3.Client
	bucket   string
	prefix   string // ends with a slash
	staged   string
	partSize int64 // of every part but the last
	asm      assembler
	locks    keylock.Set // by group, held while its assembly is made or used
}

var _ Staging = (*s3Staging)(nil)

// S3Staging keeps uploads in a bucket, where every server serving the
// bucket finds them. The bytes of a PATCH are cut into parts on local disk
// (cfg.TempDir) before they go to the bucket, at most two parts per PATCH
// in progress besides the cfg.PartConcurrency parts being sent.
func S3Staging(cfg S3Config) (Staging, error) {
	if cfg.Client == nil || cfg.Bucket == "" || cfg.Prefix == "" || cfg.Assembler == nil {
		return nil, errors.New("S3 staging: client, bucket, prefix and assembler are required")
	}
	api := cfg.Client
	st := s3store.New(cfg.Bucket, api)
	st.ObjectPrefix = strings.TrimSuffix(cfg.Prefix, "/")
	st.PreferredPartSize = cfg.PartSize
	if st.PreferredPartSize == 0 {
		st.PreferredPartSize = 16 << 20
	}
	// Parts of one size: tusd sends a part of at least MinPartSize, and
	// keeps a shorter tail for the next chunk.
	st.MinPartSize = st.PreferredPartSize
	st.MaxBufferedParts = 1
	st.TemporaryDirectory = cfg.TempDir
	conc := cfg.PartConcurrency
	if conc <= 0 {
		conc = 2
	}
	st.SetConcurrentPartUploads(conc)
	return &s3Staging{S3Store: st, api: api, bucket: cfg.Bucket, prefix: st.ObjectPrefix + "/", staged: cfg.Staged, partSize: st.PreferredPartSize, asm: cfg.Assembler}, nil
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
// only where there is none: If-None-Match: *, or, where the server does
// not apply it (one instance), a look under the lock the caller holds.
func (s *s3Staging) putRecord(ctx context.Context, key *string, b []byte, onlyNew bool) error {
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}
	switch {
	case onlyNew && s.asm.Engine().Shared:
		in.IfNoneMatch = aws.String("*")
	case onlyNew:
		_, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: key})
		if err == nil {
			return &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "the record exists"}
		}
		if !notFound(err) {
			return err
		}
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

// Join places the partials' bytes as the parts of the final upload's
// multipart upload, then completes it. The parts are all of one size
// but the last (joinCut), as some servers require: each a range of one
// partial, copied by the server, or, where it spans several, read and
// sent through largo (PlacePart). S3 takes no part below 5 MiB but the
// last: partials that small are joined only for a file of at most
// smallJoin bytes, and refused above.
func (s *s3Staging) Join(ctx context.Context, final string, parts []part, _ bool) error {
	small := false
	var total int64
	for i, p := range parts {
		small = small || p.Size < minPart && i < len(parts)-1
		total += p.Size
	}
	if small && total > smallJoin {
		return errSmallParts
	}
	obj, mp := objectID(final)
	if total > 0 {
		size := joinCut(parts, s.partSize)
		if err := s.placeParts(ctx, assembly{Key: s.prefix + obj, ID: mp}, 1, s.spans(parts, size)); err != nil {
			return err
		}
	}
	up, err := s.S3Store.GetUpload(ctx, final)
	if err != nil {
		return err
	}
	return up.FinishUpload(ctx)
}

// joinCut returns the size of the parts a join cuts the file of parts
// into: the partials' own (equalCut), when every one but the last has it
// and the last no more, so that each is copied whole; else preferred, or
// more where the file would take more than S3's most parts.
func joinCut(parts []part, preferred int64) int64 {
	var total int64
	for _, p := range parts {
		total += p.Size
	}
	if len(parts) > 0 {
		each := parts[0].Size
		uniform := parts[len(parts)-1].Size <= each
		for _, p := range parts[:len(parts)-1] {
			uniform = uniform && p.Size == each
		}
		if cut, ok := equalCut(each, total); uniform && ok {
			return cut
		}
	}
	return max(preferred, (total+maxParts-1)/maxParts)
}
