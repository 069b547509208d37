package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/filecache"
)

// fileCacheConfig is what the flags say of the open-file cache.
type fileCacheConfig struct {
	size   sizeValue
	window time.Duration
}

func addFileCacheFlags(f *pflag.FlagSet, c *fileCacheConfig) {
	c.size = filecache.DefaultMaxBytes
	f.Var(&c.size, "file-cache", "memory the open-file cache keeps the bytes of small files in (64KiB or less each), so that a file asked for often is answered with no open, stat or read of its own; a change made through largo is served at once, one made behind it within --file-cache-window (0: off)")
	f.DurationVar(&c.window, "file-cache-window", filecache.DefaultWindow, "how long a file the open-file cache keeps is served before it is looked at again (a stat, or a HEAD on a bucket): the most a change made behind largo, by another program or another instance, stays unseen")
}

// newFileCache returns the open-file cache in front of st that the flags
// ask for, nil when it is off.
func newFileCache(c *fileCacheConfig, st largo.Store) (*filecache.Store, error) {
	if c.size <= 0 {
		return nil, nil
	}
	if c.window <= 0 {
		return nil, usageErr(fmt.Errorf("--file-cache-window %s: give a positive duration", c.window))
	}
	return filecache.New(st, filecache.Options{MaxBytes: int64(c.size), Window: c.window}), nil
}
