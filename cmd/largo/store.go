package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"largo"
	"largo/disk"
	"largo/s3"
	"largo/slicecache"
)

// storeCheckTimeout bounds the start-up check of a bucket.
const storeCheckTimeout = 30 * time.Second

// closingStore is a store to close when the server stops.
type closingStore interface {
	largo.Store
	io.Closer
}

// bucket reports whether cfg serves a bucket (--store s3://...), not a
// folder.
func (cfg *serveConfig) bucket() bool { return strings.HasPrefix(cfg.store, "s3:") }

// openStore opens the store cfg names and returns it with the words that
// name it to the user. Failures are usage errors: a folder or bucket that
// is missing or refused is the user's to fix.
func openStore(ctx context.Context, e *env, cfg *serveConfig) (closingStore, string, error) {
	if cfg.bucket() {
		st, where, err := openS3(ctx, e, cfg, nil)
		if err != nil {
			return nil, "", err
		}
		return st, where, nil
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
// credentials from the flags or the standard AWS variables, reading
// through slices when it is given a slice cache.
func openS3(ctx context.Context, e *env, cfg *serveConfig, slices *slicecache.Cache) (*s3.Store, string, error) {
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
	c.Slices = slices
	c.Instances, c.Checksum = cfg.s3Engine.config()
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

// What a store may offer for writes, asked by interface, never by type.
type (
	// writePreparer checks, before writes are taken, that the store can
	// take them, and removes what writes of processes that are gone
	// left; it returns how many such leftovers it removed.
	writePreparer interface {
		PrepareWrites(ctx context.Context) (int, error)
	}
	// sweeper removes what writes that stalled since before left.
	sweeper interface {
		Sweep(ctx context.Context, before time.Time) (int, error)
	}
)

// prepare readies a store for writes: its own checks and the removal of
// what a crash left (logged), and a word of what it does differently for
// its server (engine.go).
func prepare(ctx context.Context, logger *slog.Logger, st largo.Store, where string) error {
	if p, ok := st.(writePreparer); ok {
		ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
		defer cancel()
		n, err := p.PrepareWrites(ctx)
		if err != nil {
			if errors.Is(err, s3.ErrNotShared) || errors.Is(err, s3.ErrNoTrailer) {
				return prepareErr("cannot write in "+where, err)
			}
			return cannotWrite(where, err)
		}
		if n > 0 {
			logger.Info("removed temporary files left by an interrupted run", "files", n)
		}
	}
	logEngine(logger, st)
	return nil
}

// cannotWrite is the refusal to start with writes on a store largo
// cannot write in (where, as the user is told of it): the store, what
// failed and why, and what writes need.
func cannotWrite(where string, err error) error {
	what := ""
	var pe *fs.PathError
	if errors.As(err, &pe) {
		what = " (" + pe.Op + " " + pe.Path + ")"
	}
	return usageErr(fmt.Errorf("writes are on, but largo cannot write in %s%s: %s: writes need the folder and its %s state folder writable by the user largo runs as; or turn writes off (no --upload, no rule that grants writes)", where, what, pathErrText(err), largo.StateDir))
}

// lockSweepPeriod is how often the records of expired WebDAV locks are
// removed.
const lockSweepPeriod = 5 * time.Minute

// linkSweepPeriod is how often the records of share links expired past
// their grace, and the download counts of links that are gone, are
// removed.
const linkSweepPeriod = time.Hour

// every runs clean now and then every period until ctx is done, and logs
// what it removed (what) or the error it met.
func every(ctx context.Context, logger *slog.Logger, period time.Duration, what string, clean func(context.Context) (int, error)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		n, err := clean(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweeping "+what, "err", err)
		case n > 0:
			logger.Info("removed "+what, "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
