// Package digests keeps the SHA-256 of each file beside the version it
// belongs to, so that a file can be checked long after it landed without
// being read: downloads answer it as Repr-Digest (RFC 9530), folders as
// SHA256SUMS, and nothing is ever hashed on a request's path.
//
// The write pipeline (package ingest) computes every file's SHA-256 as its
// bytes arrive; at commit it hands it to a Keeper, which records it in the
// store's state area (largo.State: .largo/digests on a folder, keys under
// the prefix's .largo/ on a bucket) with the ETag of the version just
// committed. A record answers only for that ETag: a file changed by any
// other means (copied onto the disk, put into the bucket directly,
// rewritten in place) has another ETag, and its old digest is never
// served again. Such files are hashed by Hash (largo digest, and the
// server's optional background pass, Scan), at a capped rate.
//
// Records are keyed by the SHA-256 of the file's name under "digests/",
// as package sidecar keys its own: a flat folder of fixed-length keys,
// whatever the names. A record outlives its file harmlessly (a new file
// under the same name has another ETag); the pipeline drops it when the
// file is removed, and carries it along when the file is renamed
// (Renamed) or copied (Recorded, then Record under the new name).
//
// Lookups on the download path go through a bounded cache: a positive
// answer holds as long as the file keeps its ETag, a negative one for
// NegativeTTL, so that a record written by another process or instance
// is found soon after; a small file's download does not pay a state read
// (on a bucket, a GET) each time. Concurrent misses of one name share one
// read.
package digests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"largo"
)

// Record is what is kept of a file's digest.
type Record struct {
	// Name is the file's name in the store.
	Name string `json:"name"`
	// ETag is the ETag of the version the digest belongs to.
	ETag string `json:"etag"`
	// SHA256 is the digest, in hexadecimal.
	SHA256 string `json:"sha256"`
}

// Sum returns the record's digest as bytes, or nil when it is damaged.
func (r Record) Sum() []byte {
	b, err := hex.DecodeString(r.SHA256)
	if err != nil || len(b) != sha256.Size {
		return nil
	}
	return b
}

// Prefix is where records live in the state area.
const Prefix = "digests/"

// Key returns the state key of the record of the file name.
func Key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return Prefix + hex.EncodeToString(sum[:])
}

// Put records sum as the SHA-256 of the version etag of the file name.
func Put(ctx context.Context, st largo.State, name, etag string, sum []byte) error {
	if etag == "" {
		return fmt.Errorf("digest of %s: no ETag to record it with", name)
	}
	if len(sum) != sha256.Size {
		return fmt.Errorf("digest of %s: %d bytes, not a SHA-256", name, len(sum))
	}
	b, err := json.Marshal(Record{Name: name, ETag: etag, SHA256: hex.EncodeToString(sum)})
	if err != nil {
		return err
	}
	return st.Put(ctx, Key(name), b)
}

// Get returns the record of the file name, or an error wrapping
// largo.ErrNotFound.
func Get(ctx context.Context, st largo.State, name string) (Record, error) {
	b, err := st.Get(ctx, Key(name))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil || rec.Sum() == nil {
		return Record{}, fmt.Errorf("digest of %s: a damaged record", name)
	}
	if rec.Name != name {
		return Record{}, fmt.Errorf("digest of %s: %w (the record is of %q)", name, largo.ErrNotFound, rec.Name)
	}
	return rec, nil
}

// Delete removes the record of the file name; a missing one is no error.
func Delete(ctx context.Context, st largo.State, name string) error {
	return st.Delete(ctx, Key(name))
}

// Defaults of a Keeper.
const (
	DefaultCacheSize   = 8192
	DefaultNegativeTTL = 5 * time.Second
)

// readTimeout bounds a record's read shared by several requests.
const readTimeout = 30 * time.Second

// Options tune a Keeper; the zero value means the defaults.
type Options struct {
	// Store is the store the records describe, unguarded: the server's
	// own view, to find the files below a renamed folder (Renamed) and
	// to tell whether a removed file is really gone (Forget). Nil skips
	// both: the records of a renamed folder's files stay behind (no
	// digest is served for their new names until they are hashed again),
	// and Forget drops records unconditionally.
	Store largo.Store
	// CacheSize bounds the answers kept; default DefaultCacheSize.
	CacheSize int
	// NegativeTTL is how long the absence of a record is believed;
	// default DefaultNegativeTTL.
	NegativeTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the failures of recording, which fail no write;
	// nil discards them.
	Logger *slog.Logger
}

// Keeper records and answers the digests of one store. It is safe for
// concurrent use. Make one with New; a nil *Keeper records and knows
// nothing.
type Keeper struct {
	state largo.State // nil: nothing is recorded
	store largo.Store
	log   *slog.Logger
	size  int
	ttl   time.Duration
	now   func() time.Time

	reads singleflight.Group

	mu    sync.Mutex
	cache map[string]entry
}

// entry is a cached answer for one name.
type entry struct {
	etag string    // the version it answers for
	sum  []byte    // its digest, nil when none is recorded
	at   time.Time // when it was read
}

// New returns a Keeper of the records in st; a nil st (a store without a
// state area) records nothing and knows no digest.
func New(st largo.State, opt Options) *Keeper {
	k := &Keeper{state: st, store: opt.Store, log: opt.Logger, size: opt.CacheSize, ttl: opt.NegativeTTL, now: opt.Now, cache: map[string]entry{}}
	if k.size <= 0 {
		k.size = DefaultCacheSize
	}
	if k.ttl <= 0 {
		k.ttl = DefaultNegativeTTL
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.log == nil {
		k.log = slog.New(slog.DiscardHandler)
	}
	return k
}

// Lookup returns the SHA-256 recorded for the version etag of the file
// name, or nil when none is, from the cache when it can (see the package
// doc). A record that cannot be read counts as none, and the error is
// returned for the log.
func (k *Keeper) Lookup(ctx context.Context, name, etag string) ([]byte, error) {
	if k == nil || k.state == nil || etag == "" {
		return nil, nil
	}
	if sum, ok := k.cached(name, etag); ok {
		return sum, nil
	}
	v, err, _ := k.reads.Do(name+"\x00"+etag, func() (any, error) {
		// Shared by every request that missed: none of them may cancel
		// it for the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		at := k.now()
		sum, err := k.read(ctx, name, etag)
		if err == nil {
			k.keep(name, entry{etag: etag, sum: sum, at: at})
		}
		return sum, err
	})
	sum, _ := v.([]byte)
	return sum, err
}

// Peek is Lookup for a walk through many files (a listing, SHA256SUMS):
// it answers from the cache when it can, and otherwise reads the record
// without keeping the answer, so that a walk does not push the answers
// of downloads out of the cache.
func (k *Keeper) Peek(ctx context.Context, name, etag string) ([]byte, error) {
	if k == nil || k.state == nil || etag == "" {
		return nil, nil
	}
	if sum, ok := k.cached(name, etag); ok {
		return sum, nil
	}
	return k.read(ctx, name, etag)
}

// cached returns the answer kept for name at etag, if it still holds.
func (k *Keeper) cached(name, etag string) ([]byte, bool) {
	k.mu.Lock()
	e, hit := k.cache[name]
	k.mu.Unlock()
	if !hit || e.etag != etag {
		return nil, false
	}
	if e.sum == nil && k.now().Sub(e.at) >= k.ttl {
		return nil, false
	}
	return e.sum, true
}

// read reads the record of name and returns its digest if it belongs to
// etag. A missing record is no error.
func (k *Keeper) read(ctx context.Context, name, etag string) ([]byte, error) {
	rec, err := Get(ctx, k.state, name)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case rec.ETag != etag:
		return nil, nil
	}
	return rec.Sum(), nil
}

// keep caches e for name, evicting another answer when the cache is full.
func (k *Keeper) keep(name string, e entry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.cache[name]; !ok && len(k.cache) >= k.size {
		for n := range k.cache { // any one: the map's order is random
			delete(k.cache, n)
			break
		}
	}
	k.cache[name] = e
}

// forget drops the cached answer for name.
func (k *Keeper) forget(name string) {
	k.mu.Lock()
	delete(k.cache, name)
	k.mu.Unlock()
}

// Len returns the number of answers cached.
func (k *Keeper) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.cache)
}
