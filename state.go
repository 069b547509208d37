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
