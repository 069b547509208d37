// Package sidecar tells the precompressed sidecars largo wrote from the
// files users put beside their originals. A data.csv.gz next to data.csv
// may be data.csv compressed, or a file of its own that a user uploaded;
// its name cannot say which, and taking a user's file for another file's
// encoding sends gzip clients the wrong content and hides the file from
// listings. So every sidecar largo precompress writes is recorded in the
// store's state area (largo.State), with the sidecar's ETag as written and
// the ETag of the version of the original it was made from, and the
// server takes NAME.gz for NAME's encoding only while both still match
// (and for largo's own, hidden from listings, while the first does).
// Anything else with a sidecar's name is a file like any other.
//
// Records are keyed by the SHA-256 of the sidecar's name, under "sidecars/":
// a flat folder of fixed-length keys, whatever the names (a sidecar's name
// could be a folder's name too). A record outlives its sidecar harmlessly:
// a new file under the same name has another ETag.
//
// Checker answers whether a file is a recorded sidecar (Of: largo's own,
// to hide from listings and remove with its original) and whether it is
// fresh (Recorded: made from the original as it is now, to send as its
// encoding), from a bounded cache, so that a download does not read a
// record every time: a positive answer holds as long as the sidecar keeps
// its ETag, a negative one for NegativeTTL, so that a sidecar written by
// another process (precompress commits the sidecar, then its record) is
// found soon after.
//
// Policy (policy.go) is the one definition of which files stand for
// another as its encoding, under --sidecars recorded (the records) or any
// (any regular file not older than its original, as nginx's
// gzip_static): serving, listings and archives (package serve) and the
// Follower share it.
//
// Follower (follow.go) keeps sidecars following their file through every
// change the write pipeline makes or is told of (ingest.Derived): a file
// removed, expired, moved or replaced takes along the sidecars that stood
// for it, records and all, and nothing written before a version is sent
// as its encoding. It reaches package gate only for the server's own
// principal, under which the pipeline removes them.
package sidecar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"largo"
)

// Record is what is kept of a sidecar largo wrote.
type Record struct {
	// Name is the sidecar's name in the store.
	Name string `json:"name"`
	// ETag is the sidecar's ETag as written.
	ETag string `json:"etag"`
	// Source is the ETag of the version of the original it was made from.
	Source string `json:"source"`
}

// Key returns the state key of the record of the sidecar name.
func Key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sidecars/" + hex.EncodeToString(sum[:])
}

// Put records that the sidecar name, as sin describes it after its
// commit, was made from the original whose ETag was source.
func Put(ctx context.Context, st largo.State, name string, sin largo.Info, source string) error {
	if sin.ETag == "" || source == "" {
		return fmt.Errorf("sidecar %s: no ETag to record", name)
	}
	b, err := json.Marshal(Record{Name: name, ETag: sin.ETag, Source: source})
	if err != nil {
		return err
	}
	return st.Put(ctx, Key(name), b)
}

// Get returns the record of the sidecar name, or an error wrapping
// largo.ErrNotFound.
func Get(ctx context.Context, st largo.State, name string) (Record, error) {
	b, err := st.Get(ctx, Key(name))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("sidecar %s: a damaged record: %v", name, err)
	}
	if rec.Name != name {
		return Record{}, fmt.Errorf("sidecar %s: %w (the record is of %q)", name, largo.ErrNotFound, rec.Name)
	}
	return rec, nil
}

// Delete removes the record of the sidecar name; a missing one is no
// error.
func Delete(ctx context.Context, st largo.State, name string) error {
	return st.Delete(ctx, Key(name))
}

// Defaults of a Checker.
const (
	DefaultCacheSize   = 4096
	DefaultNegativeTTL = 10 * time.Second
)

// Checker answers whether files are sidecars largo wrote, from a bounded
// cache of their records. It is safe for concurrent use. Make one with
// NewChecker.
type Checker struct {
	state largo.State // nil: nothing is recorded
	size  int
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]entry
}

// entry is a cached answer for one sidecar name.
type entry struct {
	etag string    // of the file when it was judged
	rec  Record    // its record, when ours
	ours bool      // recorded with that ETag
	at   time.Time // when it was judged
}

// Options tune a Checker; the zero value means the defaults.
type Options struct {
	// CacheSize bounds the answers kept; default DefaultCacheSize.
	CacheSize int
	// NegativeTTL is how long a negative answer is kept; default
	// DefaultNegativeTTL.
	NegativeTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewChecker returns a Checker over the records of st; a nil st (a store
// without a state area) has no records, so no file is taken for a
// sidecar.
func NewChecker(st largo.State, opt Options) *Checker {
	c := &Checker{state: st, size: opt.CacheSize, ttl: opt.NegativeTTL, now: opt.Now, cache: map[string]entry{}}
	if c.size <= 0 {
		c.size = DefaultCacheSize
	}
	if c.ttl <= 0 {
		c.ttl = DefaultNegativeTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Recorded reports whether the file name, described by sin, is a sidecar
// largo wrote from the original whose ETag is now source, and unchanged
// since: one to send as the original's encoding. A record that cannot be
// read counts as none, and the error is returned for the log
// (largo.ErrNotFound is no error).
func (c *Checker) Recorded(ctx context.Context, name string, sin largo.Info, source string) (bool, error) {
	rec, ours, err := c.Of(ctx, name, sin)
	return ours && source != "" && rec.Source == source, err
}

// Of returns the record of the file name, described by sin, and true when
// it is a sidecar largo wrote, unchanged since (its ETag is the recorded
// one), whether or not its original changed since. Errors are as for
// Recorded.
func (c *Checker) Of(ctx context.Context, name string, sin largo.Info) (Record, bool, error) {
	if c == nil || c.state == nil || sin.IsDir || sin.ETag == "" {
		return Record{}, false, nil
	}
	now := c.now()
	c.mu.Lock()
	e, hit := c.cache[name]
	c.mu.Unlock()
	if hit && e.etag == sin.ETag && (e.ours || now.Sub(e.at) < c.ttl) {
		return e.rec, e.ours, nil
	}
	rec, err := Get(ctx, c.state, name)
	ours := err == nil && rec.ETag == sin.ETag
	if errors.Is(err, largo.ErrNotFound) {
		err = nil
	}
	if err != nil && ctx.Err() != nil {
		return Record{}, false, err // a cancelled request says nothing of the record
	}
	if !ours {
		rec = Record{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cache[name]; !ok && len(c.cache) >= c.size {
		for k := range c.cache { // any one: the map's order is random
			delete(c.cache, k)
			break
		}
	}
	c.cache[name] = entry{etag: sin.ETag, rec: rec, ours: ours, at: now}
	return rec, ours, err
}

// Forget drops the cached answer for name, after its sidecar or record
// was removed.
func (c *Checker) Forget(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.cache, name)
	c.mu.Unlock()
}

// Len returns the number of answers kept.
func (c *Checker) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cache)
}

// Drop removes the record of the sidecar name and the answer kept for
// it, once the sidecar is gone.
func (c *Checker) Drop(ctx context.Context, name string) error {
	if c == nil {
		return nil
	}
	c.Forget(name)
	if c.state == nil {
		return nil
	}
	return Delete(ctx, c.state, name)
}

// Carry moves the record of the sidecar from to to, where a move put it,
// now described by sin: kept only while the sidecar is the version
// recorded (a rename keeps it, and so does a copy that keeps the bytes'
// ETag), dropped otherwise. A sidecar without a record has none to move.
func (c *Checker) Carry(ctx context.Context, from, to string, sin largo.Info) error {
	if c == nil || c.state == nil {
		return nil
	}
	rec, err := Get(ctx, c.state, from)
	if errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	if err == nil && rec.ETag == sin.ETag {
		err = Put(ctx, c.state, to, sin, rec.Source)
	}
	c.Forget(to)
	return errors.Join(err, c.Drop(ctx, from))
}
