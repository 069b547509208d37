package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"largo"
	"largo/s3"
	"largo/slicecache"
)

// sliceConfig is what --s3-cache and --s3-cache-size say.
type sliceConfig struct {
	dir string
	max sizeValue
}

// defaultSliceCacheMax is the cap of the slice cache unless
// --s3-cache-size says otherwise: a few hot files of a GiB, on any disk
// that has room for a service's logs.
const defaultSliceCacheMax = 4 << 30

// addSliceFlags registers --s3-cache and --s3-cache-size on f.
func addSliceFlags(f *pflag.FlagSet, cfg *sliceConfig) {
	cfg.max = defaultSliceCacheMax
	f.StringVar(&cfg.dir, "s3-cache", "", "folder on the local disk where slices of the bucket's objects are kept, so that a file many clients download is read from the bucket about once and sent by sendfile, like a folder's; an empty folder that nothing else uses (default none: every download reads the bucket)")
	f.Var(&cfg.max, "s3-cache-size", "most bytes of slices --s3-cache holds; the least recently used go first (at least 64MiB)")
}

// openServed opens the store largo serve serves: the one openStore opens,
// and, with --s3-cache, a bucket that reads through a slice cache, which
// it closes with the store.
func openServed(ctx context.Context, e *env, cfg *serveConfig, logger *slog.Logger) (closingStore, string, error) {
	sc := &cfg.slices
	if sc.dir == "" {
		return openStore(ctx, e, cfg)
	}
	if !cfg.bucket() {
		return nil, "", usageErr(errors.New("--s3-cache: for a bucket (--store s3://BUCKET/PREFIX) only; a folder's files are on the disk already"))
	}
	if err := apart(sc.dir, cfg.listingTemp); err != nil {
		return nil, "", usageErr(err)
	}
	cache, err := slicecache.New(slicecache.Config{Dir: sc.dir, Max: int64(sc.max), Log: logger})
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("--s3-cache: %v", err))
	}
	st, where, err := openS3(ctx, e, cfg, cache)
	if err != nil {
		cache.Close()
		return nil, "", err
	}
	held := cache.Stats()
	logger.Info("bucket read through a slice cache", "dir", cache.Dir(), "cap", largo.FormatSize(int64(sc.max)), "held", largo.FormatSize(held.Bytes))
	return &slicedStore{Store: st, cache: cache}, where, nil
}

// apart refuses a slice cache in the folder of the listings' sorted runs,
// or around it: each would find the other's files its own.
func apart(cache, listingTemp string) error {
	if listingTemp == "" {
		return nil
	}
	a, err1 := filepath.Abs(cache)
	b, err2 := filepath.Abs(listingTemp)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if a == b || strings.HasPrefix(a, b+string(filepath.Separator)) || strings.HasPrefix(b, a+string(filepath.Separator)) {
		return fmt.Errorf("--s3-cache %s and --listing-temp-dir %s: give folders apart", cache, listingTemp)
	}
	return nil
}

// slicedStore is a bucket's store with the slice cache it reads through,
// closed with it. Every method of the store, the optional ones too, is
// the store's own.
type slicedStore struct {
	*s3.Store
	cache *slicecache.Cache
}

// Close closes the store, then the cache: the fills in flight end.
func (s *slicedStore) Close() error {
	return errors.Join(s.Store.Close(), s.cache.Close())
}
