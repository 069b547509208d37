package largo

import (
	"context"
	"iter"
	"time"
)

// A store's state area is StateDir: on a folder, the hidden folder
// .largo inside it; on a bucket, the keys under the prefix's .largo/. Each
// store owns its own and is the only way to it, so that what largo keeps
// there (temporary uploads, resumable uploads, their records) follows the
// store wherever it is, and every instance serving one store sees the
// same state.

// StateKeeper is a store that keeps records in its state area.
type StateKeeper interface {
	// State returns the store's records.
	State() State
}

// State holds small records in a store's state area, each written and
// read whole. Keys are slash-separated names relative to the area, such
// as "tus/ID.done". Implementations must be safe for concurrent use.
type State interface {
	// Get returns the record key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes the record key, replacing any: a reader sees the old
	// record or the whole new one.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes the record key; a missing record is no error.
	Delete(ctx context.Context, key string) error
	// List yields the records whose key starts with prefix, in no
	// particular order.
	List(ctx context.Context, prefix string) iter.Seq2[Record, error]
}

// Record describes a record of a State.
type Record struct {
	// Key is the record's key.
	Key string
	// ModTime is when it was last written.
	ModTime time.Time
}

// StateCreator is a State that writes a record only where none is: the
// lease that replicas agree on (WebDAV locks). On a folder it is a link
// into place; on a bucket a PUT with If-None-Match: *.
type StateCreator interface {
	// Create writes the record key unless one exists, which is an error
	// wrapping ErrExist. Of two instances creating one key at once,
	// exactly one succeeds.
	Create(ctx context.Context, key string, data []byte) error
}

// StateSwapper is a State whose records are replaced and removed only as
// they were read: the compare-and-swap that lets replicas take over a
// lease that expired (a WebDAV lock, an upload's append) without two of
// them believing they hold it. On a folder the comparison and the rename
// are made under a lock of the state area that every process serving the
// folder takes; on a bucket they are If-Match on PUT and DELETE.
type StateSwapper interface {
	// GetVersion returns the record key and its version: an opaque
	// string that differs for every record of other bytes. A missing
	// record is an error wrapping ErrNotFound.
	GetVersion(ctx context.Context, key string) ([]byte, string, error)
	// Swap replaces the record key with data if it is still the record
	// of version, and returns the new record's version; else, or if it
	// is gone, it fails with an error wrapping ErrPrecondition. Of two
	// instances swapping one version at once, exactly one succeeds.
	Swap(ctx context.Context, key string, data []byte, version string) (string, error)
	// DeleteIf removes the record key if it is still the record of
	// version; else it fails with an error wrapping ErrPrecondition. A
	// record already gone is no error.
	DeleteIf(ctx context.Context, key, version string) error
}

// StatePager is a State that lists its records in key order, a page at a
// time, from where the last page ended: what reads a queue (the hooks'
// outbox) oldest first without ever holding more than a page of keys.
type StatePager interface {
	// Page returns at most limit records whose keys start with prefix
	// (a folder's, ending in "/") and sort after after (nothing: ""),
	// in key order. Fewer than limit means the end was reached.
	Page(ctx context.Context, prefix, after string, limit int) ([]Record, error)
}
