package s3

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

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
	o, err := s.head(ctx, name)
	switch {
	case err == nil:
		return s.removeFile(ctx, name, o, opt.Condition)
	case errors.Is(err, largo.ErrIsDir):
		return s.removeDir(ctx, name, opt)
	}
	return err
}

func (s *Store) removeFile(ctx context.Context, name string, o object, cond largo.Condition) error {
	if err := cond.Check(name, fileInfo(name, o), true); err != nil {
		return err
	}
	unlock, err := s.lockCond(ctx, name, s.key(name), cond)
	if err != nil {
		return err
	}
	defer unlock()
	in := &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))}
	if sc := s.serverCond(cond); sc.IfMatch != "" && sc.IfMatch != "*" {
		in.IfMatch = &sc.IfMatch
	}
	if _, err := s.api.DeleteObject(ctx, in); err != nil {
		return writeErr(name, cond, err)
	}
	return nil
}

func (s *Store) removeDir(ctx context.Context, name string, opt largo.RemoveOptions) error {
	if opt.Condition.IfMatch != "" {
		return fmt.Errorf("%s is a folder: %w", name, largo.ErrPrecondition)
	}
	dir := s.key(name) + "/"
	if !opt.Recursive {
		out, err := s.listObjects(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir, MaxKeys: aws.Int32(2)})
		if err != nil {
			return mapErr(name, err)
		}
		for _, o := range out.Contents {
			if aws.ToString(o.Key) != dir {
				return fmt.Errorf("%s: %w", name, largo.ErrNotEmpty)
			}
		}
		if _, err := s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &dir}); err != nil {
			return writeErr(name, largo.Condition{}, err)
		}
		return nil
	}
	// A page of keys at a time (a thousand at most), each page removed
	// in one request before the next is listed.
	pages := s.pages(&awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return mapErr(name, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		objs := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			objs[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := s.api.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &s.bucket, Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return writeErr(name, largo.Condition{}, err)
		}
		for _, e := range out.Errors {
			if code := aws.ToString(e.Code); code != "NoSuchKey" {
				return fmt.Errorf("%s: removing %s: %s: %s", name, aws.ToString(e.Key), code, oneLine(aws.ToString(e.Message)))
			}
		}
	}
	return nil
}

// Sweep aborts the multipart uploads that writes of this store (of any
// instance) began before before and never completed or aborted: those a
// crashed or killed instance left behind, which would otherwise hold
// their parts' space for ever. Each such upload is recorded in the
// store's state area while it is in progress (see recordUpload), so the
// sweep knows them by their records, and never touches an upload of
// another application in the same bucket, whatever the prefix. It leaves
// alone this store's uploads in progress. An upload of another instance
// still in progress after that long is aborted too, so before must lie
// further back than the longest upload. It returns how many it aborted.
func (s *Store) Sweep(ctx context.Context, before time.Time) (int, error) {
	st := s.State()
	n := 0
	for rec, err := range st.List(ctx, uploadsKey) {
		if err != nil {
			return n, err
		}
		if !rec.ModTime.Before(before) {
			continue
		}
		b, err := st.Get(ctx, rec.Key)
		if errors.Is(err, largo.ErrNotFound) {
			continue // completed meanwhile
		}
		if err != nil {
			return n, err
		}
		var up recordedUpload
		if json.Unmarshal(b, &up) != nil || up.Key == "" || up.ID == "" {
			st.Delete(ctx, rec.Key)
			continue
		}
		if _, mine := s.active.Load(up.ID); mine {
			continue
		}
		_, err = s.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &up.Key, UploadId: &up.ID})
		if err != nil && !errors.Is(mapErr(up.Key, err), largo.ErrNotFound) {
			return n, mapErr(up.Key, err)
		}
		if err := st.Delete(ctx, rec.Key); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// uploadsKey is the state folder of the records of multipart uploads in
// progress.
const uploadsKey = "multipart/"

// recordedUpload is the record of a multipart upload in progress.
type recordedUpload struct {
	Key string `json:"key"`
	ID  string `json:"id"`
}

// uploadRecord is the state key of the record of upload id.
func uploadRecord(id string) string {
	sum := sha256.Sum256([]byte(id))
	return uploadsKey + hex.EncodeToString(sum[:16])
}

// recordUpload records a multipart upload just begun, for Sweep.
func (s *Store) recordUpload(ctx context.Context, key, id string) error {
	b, _ := json.Marshal(recordedUpload{Key: key, ID: id})
	return s.State().Put(ctx, uploadRecord(id), b)
}

// forgetUpload removes the record of a multipart upload that ended. A
// failure leaves a record whose upload is gone, which Sweep drops.
func (s *Store) forgetUpload(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	s.State().Delete(ctx, uploadRecord(id))
}
