package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"largo"
	"largo/disk"
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
		Bucket:       bucket,
		Prefix:       prefix,
		Endpoint:     firstSet(e, cfg.s3Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:       firstSet(e, cfg.s3Region, "AWS_REGION", "AWS_DEFAULT_REGION"),
		AccessKey:    firstSet(e, "", "AWS_ACCESS_KEY_ID"),
		SecretKey:    firstSet(e, "", "AWS_SECRET_ACCESS_KEY"),
		SessionToken: firstSet(e, "", "AWS_SESSION_TOKEN"),
		VirtualHost:  cfg.s3VirtualHost,
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
