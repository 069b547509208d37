package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"largo"
	"largo/disk"
	"largo/resumable"
	"largo/s3"
)

// storeCheckTimeout bounds the start-up check of a bucket.
const storeCheckTimeout = 30 * time.Second

// closingStore is a store to close when the server stops.
type closingStore interface {
	largo.Store
	io.Closer
}

// openStore opens the store cfg names and returns it with the words that
// name it to the user. Failures are usage errors: a folder or bucket that
// is missing or refused is the user's to fix.
func openStore(ctx context.Context, e *env, cfg *serveConfig) (closingStore, string, error) {
	if strings.HasPrefix(cfg.store, "s3:") {
		return openS3(ctx, e, cfg)
	}
	dir := cfg.store
	if dir == "" {
		dir = cfg.dir
	}
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", usageErr(err)
	}
	s, err := disk.Open(abs)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("cannot serve %s: %v", dir, pathErrText(err)))
	}
	return s, abs, nil
}

// openS3 opens the bucket of an s3:// URL, with the endpoint, region and
// credentials from the flags or the standard AWS variables.
func openS3(ctx context.Context, e *env, cfg *serveConfig) (closingStore, string, error) {
	bucket, prefix, err := s3.ParseURL(cfg.store)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("--store: %v", err))
	}
	c := s3.Config{
		Bucket:          bucket,
		Prefix:          prefix,
		Endpoint:        firstSet(e, cfg.s3Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:          firstSet(e, cfg.s3Region, "AWS_REGION", "AWS_DEFAULT_REGION"),
		AccessKey:       firstSet(e, "", "AWS_ACCESS_KEY_ID"),
		SecretKey:       firstSet(e, "", "AWS_SECRET_ACCESS_KEY"),
		SessionToken:    firstSet(e, "", "AWS_SESSION_TOKEN"),
		VirtualHost:     cfg.s3VirtualHost,
		PartSize:        int64(cfg.s3PartSize),
		PartConcurrency: cfg.s3PartConc,
	}
	if c.PartSize < s3.MinPartSize || c.PartSize > s3.MaxPartSize {
		return nil, "", usageErr(fmt.Errorf("--s3-part-size %s: must be between 5MiB and 5GiB", &cfg.s3PartSize))
	}
	if c.PartConcurrency < 1 {
		return nil, "", usageErr(fmt.Errorf("--s3-part-concurrency %d: must be at least 1", c.PartConcurrency))
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	s, err := s3.New(ctx, c)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("cannot serve %s: %v", cfg.store, err))
	}
	where := "s3://" + bucket + "/" + prefix
	return s, where, nil
}

// firstSet returns v if it is set, else the first environment variable
// among names that is.
func firstSet(e *env, v string, names ...string) string {
	if v != "" {
		return v
	}
	for _, n := range names {
		if x, ok := e.getenv(n); ok && x != "" {
			return x
		}
	}
	return ""
}

// prepareBucket readies a bucket for writes: it checks that the
// credentials may write and which conditions the server applies, starts
// the sweep of the multipart uploads that interrupted writes leave, and
// returns the staging of resumable uploads, in the bucket. The sweep runs
// until ctx is done.
func prepareBucket(ctx context.Context, logger *slog.Logger, cfg *serveConfig, store *s3.Store) (resumable.Staging, error) {
	cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	if err := store.PrepareWrites(cctx); err != nil {
		return nil, usageErr(fmt.Errorf("--upload: %v", err))
	}
	if !store.ConditionalWrites() {
		logger.Warn("the S3 server does not apply conditional writes: writes with If-None-Match or If-Match are answered 501")
	}
	sh := store.Shared()
	staging, err := resumable.S3Staging(resumable.S3Config{
		Client:          sh.Client,
		Bucket:          sh.Bucket,
		Prefix:          sh.Prefix + largo.StateDir + "/tus",
		Staged:          largo.StateDir + "/tus",
		PartSize:        sh.PartSize,
		PartConcurrency: sh.PartConcurrency,
	})
	if err != nil {
		return nil, usageErr(fmt.Errorf("--upload: %v", err))
	}
	go sweepBucket(ctx, logger, store, cfg.uploadExpiry)
	return staging, nil
}

// sweepBucket aborts, every quarter of the expiry (between a second and a
// quarter of an hour), the multipart uploads older than the expiry that
// interrupted writes left in the bucket, until ctx is done.
func sweepBucket(ctx context.Context, logger *slog.Logger, store *s3.Store, expiry time.Duration) {
	t := time.NewTicker(min(max(expiry/4, time.Second), 15*time.Minute))
	defer t.Stop()
	for {
		n, err := store.Sweep(ctx, time.Now().Add(-expiry))
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweeping multipart uploads left in the bucket", "err", err)
		case n > 0:
			logger.Info("aborted multipart uploads left by interrupted writes", "uploads", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
