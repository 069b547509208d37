package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"largo"
)

// Remove implements largo.Remover. A file is one DELETE, made conditional
// on the ETag by the server itself under If-Match. A folder is a key
// prefix: without Recursive it goes only when nothing but its marker
// object (KEY/) lies under it; with Recursive every key under it is
// removed, a thousand per request.
func (s *Store) Remove(ctx context.Context, name string, opt largo.RemoveOptions) error {
	if name == "" {
		return fmt.Errorf("the root folder: %w", largo.ErrPermission)
	}
	oi, err := s.head(ctx, name)
	switch {
	case err == nil:
		return s.removeFile(ctx, name, oi, opt.Condition)
	case errors.Is(err, largo.ErrIsDir):
		return s.removeDir(ctx, name, opt)
	}
	return err
}

func (s *Store) removeFile(ctx context.Context, name string, oi minio.ObjectInfo, cond largo.Condition) error {
	if err := cond.Check(name, fileInfo(name, oi), true); err != nil {
		return err
	}
	if cond.IfMatch != "" && cond.IfMatch != "*" {
		if s.noCond.Load() {
			return errNoConditions(name)
		}
		ctx = withHeader(ctx, "If-Match", cond.IfMatch)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.key(name), minio.RemoveObjectOptions{}); err != nil {
		return writeErr(name, cond, err)
	}
	return nil
}

func (s *Store) removeDir(ctx context.Context, name string, opt largo.RemoveOptions) error {
	if opt.Condition.IfMatch != "" {
		return fmt.Errorf("%s is a folder: %w", name, largo.ErrPrecondition)
	}
	dir := s.key(name) + "/"
	list := minio.ListObjectsOptions{Prefix: dir, Recursive: true, FetchOwner: new(bool)}
	if !opt.Recursive {
		list.MaxKeys = 2
		for o := range s.client.ListObjectsIter(ctx, s.bucket, list) {
			if o.Err != nil {
				return mapErr(name, o.Err)
			}
			if o.Key != dir {
				return fmt.Errorf("%s: %w", name, largo.ErrNotEmpty)
			}
		}
		if err := s.client.RemoveObject(ctx, s.bucket, dir, minio.RemoveObjectOptions{}); err != nil {
			return writeErr(name, largo.Condition{}, err)
		}
		return nil
	}
	var listErr error
	keys := func(yield func(minio.ObjectInfo) bool) {
		for o := range s.client.ListObjectsIter(ctx, s.bucket, list) {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			if !yield(o) {
				return
			}
		}
	}
	results, err := s.client.RemoveObjectsWithIter(ctx, s.bucket, keys, minio.RemoveObjectsOptions{})
	if err != nil {
		return mapErr(name, err)
	}
	for r := range results {
		if r.Err != nil {
			return writeErr(name, largo.Condition{}, fmt.Errorf("removing %s: %w", r.ObjectName, r.Err))
		}
	}
	if listErr != nil {
		return mapErr(name, listErr)
	}
	return nil
}

// PrepareWrites checks, before a server takes writes, that the credentials
// may write to the bucket, and finds out whether the server applies the
// conditional writes largo relies on for If-None-Match and If-Match
// (If-None-Match: * on PUT and on the completion of a multipart upload,
// If-Match on DELETE). It does so with a few requests on a probe object in
// largo's state folder, removed afterwards. When the server ignores a
// condition, writes under a condition are refused (largo.ErrUnsupported)
// rather than done with a check that would race with other writers.
// Without PrepareWrites, the server is assumed to apply them.
func (s *Store) PrepareWrites(ctx context.Context) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	probe := largo.StateDir + "/probe-" + hex.EncodeToString(rnd[:])
	key := s.key(probe)
	exclusive := putOptions(largo.Condition{IfNoneMatch: true})
	put := func() error {
		_, err := s.core.PutObject(ctx, s.bucket, key, strings.NewReader("probe"), 5, "", "", exclusive)
		return err
	}
	if err := put(); err != nil {
		return fmt.Errorf("bucket %q refuses writes: %v", s.bucket, oneLine(mapErr(probe, err).Error()))
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	}()
	ok, err := refused(put())
	if ok && err == nil {
		ok, err = s.probeMultipart(ctx, key, exclusive)
	}
	if ok && err == nil {
		ctx := withHeader(ctx, "If-Match", `"largo-probe-mismatch"`)
		ok, err = refused(s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
	}
	if err != nil {
		return fmt.Errorf("bucket %q: probing conditional writes: %v", s.bucket, oneLine(err.Error()))
	}
	s.noCond.Store(!ok)
	return nil
}

// ConditionalWrites reports whether the store applies If-None-Match and
// If-Match to writes (see PrepareWrites).
func (s *Store) ConditionalWrites() bool { return !s.noCond.Load() }

// probeMultipart completes a multipart upload to the existing key under
// opts, which must be refused.
func (s *Store) probeMultipart(ctx context.Context, key string, opts minio.PutObjectOptions) (bool, error) {
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{})
	if err != nil {
		return false, err
	}
	defer s.core.AbortMultipartUpload(context.WithoutCancel(ctx), s.bucket, key, id)
	p, err := s.core.PutObjectPart(ctx, s.bucket, key, id, 1, strings.NewReader("probe"), 5, minio.PutObjectPartOptions{})
	if err != nil {
		return false, err
	}
	_, err = s.core.CompleteMultipartUpload(ctx, s.bucket, key, id, []minio.CompletePart{{PartNumber: 1, ETag: p.ETag}}, opts)
	return refused(err)
}

// refused reports whether err is the refusal of a failed precondition
// (and nil for it), false for a success, and passes any other error on.
func refused(err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if errors.Is(mapErr("", err), largo.ErrPrecondition) {
		return true, nil
	}
	return false, err
}

// Sweep aborts the multipart uploads under the prefix begun before
// before: those a crashed or killed instance left behind, which would
// otherwise hold their parts' space for ever. It leaves alone this
// store's uploads in progress and those under largo.StateDir (resumable
// uploads, which expire by their own clock). An upload of another
// instance still in progress after that long is aborted too, so before
// must lie further back than the longest upload. It returns how many it
// aborted.
func (s *Store) Sweep(ctx context.Context, before time.Time) (int, error) {
	n := 0
	var keyMarker, idMarker string
	for {
		res, err := s.core.ListMultipartUploads(ctx, s.bucket, s.prefix, keyMarker, idMarker, "", 1000)
		if err != nil {
			return n, mapErr("multipart uploads", err)
		}
		for _, up := range res.Uploads {
			if _, mine := s.active.Load(up.UploadID); mine || !up.Initiated.Before(before) ||
				strings.HasPrefix(up.Key, s.prefix+largo.StateDir+"/") {
				continue
			}
			if err := s.core.AbortMultipartUpload(ctx, s.bucket, up.Key, up.UploadID); err != nil {
				return n, mapErr(up.Key, err)
			}
			n++
		}
		if !res.IsTruncated {
			return n, nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// headerKey is the context key of the headers withHeader adds.
type headerKey struct{}

// withHeader returns a context whose store requests carry the header k:
// for headers minio-go has no option for, such as If-Match on DELETE. They
// are added after signing, so they must not be x-amz- headers (which S3
// requires signed).
func withHeader(ctx context.Context, k, v string) context.Context {
	h := http.Header{}
	if old, ok := ctx.Value(headerKey{}).(http.Header); ok {
		h = old.Clone()
	}
	h.Set(k, v)
	return context.WithValue(ctx, headerKey{}, h)
}

// headerTransport adds the headers of withHeader to the requests.
type headerTransport struct{ base http.RoundTripper }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h, ok := r.Context().Value(headerKey{}).(http.Header); ok {
		r = r.Clone(r.Context())
		for k, v := range h {
			r.Header[k] = v
		}
	}
	return t.base.RoundTrip(r)
}
