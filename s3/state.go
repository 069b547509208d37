package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"largo"
)

var (
	_ largo.StateKeeper  = (*Store)(nil)
	_ largo.StateCreator = state{}
	_ largo.StateSwapper = state{}
)

// maxRecord bounds what Get reads of a record: records are small.
const maxRecord = 1 << 20

// State implements largo.StateKeeper: records are objects under the
// prefix's largo.StateDir, which every instance serving the bucket sees.
// A record is written whole by one PUT, so a reader sees the old object or
// the new one. Where the server does not apply conditional writes (one
// instance), or answers one 501, Create, Swap and DeleteIf refuse
// (largo.ErrUnsupported), and package record makes its changes under a
// lock of its own.
func (s *Store) State() largo.State { return state{s} }

type state struct{ s *Store }

func (st state) key(key string) (string, error) {
	name, err := largo.ParseName("/" + key)
	if err != nil || name == "" {
		return "", fmt.Errorf("state key %q: %w", key, largo.ErrInvalidName)
	}
	return st.s.key(largo.StateDir + "/" + name), nil
}

func (st state) Get(ctx context.Context, key string) ([]byte, error) {
	b, _, err := st.GetVersion(ctx, key)
	return b, err
}

// GetVersion implements largo.StateSwapper: the version is the object's
// ETag, which Swap and DeleteIf send as If-Match.
func (st state) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	k, err := st.key(key)
	if err != nil {
		return nil, "", err
	}
	out, err := st.s.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &st.s.bucket, Key: &k})
	if err != nil {
		return nil, "", mapErr(key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxRecord+1))
	if err != nil {
		return nil, "", mapErr(key, err)
	}
	if len(b) > maxRecord {
		return nil, "", fmt.Errorf("state record %s: over %d bytes", key, maxRecord)
	}
	return b, aws.ToString(out.ETag), nil
}

// Swap implements largo.StateSwapper: one PUT with If-Match, which the
// bucket refuses (412) when the object changed, or (404) is gone.
func (st state) Swap(ctx context.Context, key string, data []byte, version string) (string, error) {
	if !st.s.shared() {
		return "", fmt.Errorf("state record %s: replace only if unchanged: %w", key, largo.ErrUnsupported)
	}
	if version == "" {
		return "", fmt.Errorf("state record %s: no version: %w", key, largo.ErrPrecondition)
	}
	k, err := st.key(key)
	if err != nil {
		return "", err
	}
	out, err := st.s.api.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        &st.s.bucket,
		Key:           &k,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		IfMatch:       aws.String(version),
	})
	if err == nil {
		return aws.ToString(out.ETag), nil
	}
	if refusedNotImplemented(err) {
		return "", fmt.Errorf("state record %s: replace only if unchanged: %w: %v", key, largo.ErrUnsupported, errText(err))
	}
	if err = mapErr(key, err); errors.Is(err, largo.ErrNotFound) {
		return "", fmt.Errorf("state record %s: gone: %w: %w", key, largo.ErrPrecondition, err)
	}
	return "", err
}

// DeleteIf implements largo.StateSwapper: one DELETE with If-Match.
func (st state) DeleteIf(ctx context.Context, key, version string) error {
	if !st.s.shared() {
		return fmt.Errorf("state record %s: remove only if unchanged: %w", key, largo.ErrUnsupported)
	}
	if version == "" {
		return fmt.Errorf("state record %s: no version: %w", key, largo.ErrPrecondition)
	}
	k, err := st.key(key)
	if err != nil {
		return err
	}
	_, err = st.s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &st.s.bucket, Key: &k, IfMatch: aws.String(version)})
	if err == nil {
		return nil
	}
	if refusedNotImplemented(err) {
		return fmt.Errorf("state record %s: remove only if unchanged: %w: %v", key, largo.ErrUnsupported, errText(err))
	}
	err = mapErr(key, err)
	if errors.Is(err, largo.ErrPrecondition) {
		// Some servers (SeaweedFS) answer 412 rather than 404 when the
		// record is gone: gone it is, whatever the version.
		if _, herr := st.s.headKey(ctx, k); errors.Is(mapErr(key, herr), largo.ErrNotFound) {
			return nil
		}
	}
	if errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	return err
}

func (st state) Put(ctx context.Context, key string, data []byte) error {
	return st.put(ctx, key, data, false)
}

// Create implements largo.StateCreator: one PUT with If-None-Match: *,
// which the bucket refuses (412) when the key exists.
func (st state) Create(ctx context.Context, key string, data []byte) error {
	if !st.s.shared() {
		return fmt.Errorf("state record %s: create only if absent: %w", key, largo.ErrUnsupported)
	}
	return st.put(ctx, key, data, true)
}

func (st state) put(ctx context.Context, key string, data []byte, excl bool) error {
	k, err := st.key(key)
	if err != nil {
		return err
	}
	in := &awss3.PutObjectInput{
		Bucket:        &st.s.bucket,
		Key:           &k,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if excl {
		in.IfNoneMatch = aws.String("*")
	}
	_, err = st.s.api.PutObject(ctx, in)
	if excl && refusedNotImplemented(err) {
		return fmt.Errorf("state record %s: create only if absent: %w: %v", key, largo.ErrUnsupported, errText(err))
	}
	if err != nil {
		err = mapErr(key, err)
		if excl && errors.Is(err, largo.ErrPrecondition) {
			return fmt.Errorf("state record %s: %w", key, largo.ErrExist)
		}
		return err
	}
	return nil
}

func (st state) Delete(ctx context.Context, key string) error {
	k, err := st.key(key)
	if err != nil {
		return err
	}
	_, err = st.s.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &st.s.bucket, Key: &k})
	if err != nil && !errors.Is(mapErr(key, err), largo.ErrNotFound) {
		return mapErr(key, err)
	}
	return nil
}

// List yields the records whose key starts with prefix, a page of keys at
// a time.
func (st state) List(ctx context.Context, prefix string) iter.Seq2[largo.Record, error] {
	return func(yield func(largo.Record, error) bool) {
		base := st.s.key(largo.StateDir + "/")
		p := st.s.pages(&awss3.ListObjectsV2Input{Bucket: &st.s.bucket, Prefix: aws.String(base + prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(largo.Record{}, mapErr(prefix, err))
				return
			}
			for _, o := range page.Contents {
				rec := largo.Record{Key: strings.TrimPrefix(aws.ToString(o.Key), base)}
				if o.LastModified != nil {
					rec.ModTime = *o.LastModified
				}
				if !yield(rec, nil) {
					return
				}
			}
		}
	}
}

var _ largo.StatePager = state{}

// Page implements largo.StatePager: one ListObjectsV2, which lists keys
// in order, from after (StartAfter) on.
func (st state) Page(ctx context.Context, prefix, after string, limit int) ([]largo.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	base := st.s.key(largo.StateDir + "/")
	in := &awss3.ListObjectsV2Input{Bucket: &st.s.bucket, Prefix: aws.String(base + prefix), MaxKeys: aws.Int32(int32(min(limit, 1000)))}
	if after != "" {
		in.StartAfter = aws.String(base + after)
	}
	var out []largo.Record
	for len(out) < limit {
		page, err := st.s.listObjects(ctx, in)
		if err != nil {
			return nil, mapErr(prefix, err)
		}
		for _, o := range page.Contents {
			rec := largo.Record{Key: strings.TrimPrefix(aws.ToString(o.Key), base)}
			if o.LastModified != nil {
				rec.ModTime = *o.LastModified
			}
			if rec.Key > after && len(out) < limit {
				out = append(out, rec)
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
		in.MaxKeys = aws.Int32(int32(min(limit-len(out), 1000)))
	}
	return out, nil
}
