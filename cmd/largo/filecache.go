package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"largo"
	"largo/disk"
	"largo/filecache"
)

// fileCacheConfig is what the flags say of the open-file cache.
type fileCacheConfig struct {
	size   sizeValue
	window windowValue
}

// windowValue is --file-cache-window: a duration, or unset for the
// store's default.
type windowValue struct {
	d   time.Duration
	set bool
}

func (v *windowValue) String() string {
	if !v.set {
		return ""
	}
	return v.d.String()
}

func (v *windowValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("give a duration of 0 or more")
	}
	v.d, v.set = d, true
	return nil
}

func (v *windowValue) Type() string { return "duration" }

func addFileCacheFlags(f *pflag.FlagSet, c *fileCacheConfig) {
	c.size = filecache.DefaultMaxBytes
	f.Var(&c.size, "file-cache", "memory the open-file cache keeps the bytes of small files in (64KiB or less each), so that a file asked for often is answered with no open or read of its own; a change made through largo is served at once, one made behind it within --file-cache-window (0: off)")
	f.Var(&c.window, "file-cache-window", "how long a file the open-file cache keeps is served before it is looked at again: the most a change made behind largo, by another program or another instance, stays unseen; on a folder inotify tells of changes at once and this applies only where it cannot watch (default 0 on a folder: one stat before every answer; "+filecache.BucketWindow.String()+" on a bucket, where a look is a HEAD)")
}

// newFileCache returns the open-file cache in front of st, a bucket's
// store when bucket is true, that the flags ask for; nil when it is off.
// On a folder it comes with the watcher of its folders (nil when the
// system gives none), which the caller closes after the cache's last
// use.
func newFileCache(c *fileCacheConfig, st largo.Store, bucket bool) (*filecache.Store, *disk.Watcher) {
	if c.size <= 0 {
		return nil, nil
	}
	window := c.window.d
	if !c.window.set && bucket {
		window = filecache.BucketWindow
	}
	opt := filecache.Options{MaxBytes: int64(c.size), Window: window}
	if d, ok := st.(*disk.Store); ok {
		// On a folder, inotify tells of changes behind the server: a
		// file kept is served with no stat of its own. Without it (no
		// instance left), the Window's stat.
		if w, err := d.NewWatcher(2 * filecache.DefaultMaxFiles); err == nil {
			opt.Watch = w
			return filecache.New(st, opt), w
		}
	}
	return filecache.New(st, opt), nil
}
