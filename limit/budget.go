package limit

import (
	"sync"
	"time"
)

// Budget is an amount of memory, in bytes, shared by the requests whose
// work grows with the data (listings, archives, searches): each takes what
// it needs before it allocates, in steps, and gives it back when done.
// Nothing ever waits for a budget: a request that cannot get what it must
// have is answered 503 with a Retry-After, and one that cannot get more
// makes do with what it holds (a listing spills to disk sooner).
//
// The budget is shared fairly: each take names the keys of the client it
// is for (its address, its user, its share link: whatever the caller
// counts clients by), and no key holds more than the budget's share at
// once, however many requests it runs. A client that starts requests and
// never reads their answers holds its share until they are cut, and
// everyone else still has the rest.
//
// A Budget is safe for concurrent use; a nil *Budget caps nothing.
type Budget struct {
	mu    sync.Mutex
	total int64
	share int64
	used  int64
	held  map[string]int64 // by key; a key holding nothing has no entry
}

// DefaultShare is the part of a budget one key may hold when NewBudget is
// given no share: a quarter.
const DefaultShare = 4

// NewBudget returns a Budget of total bytes, of which one key holds at
// most share; zero or less total caps nothing, and zero or less share
// (or more than total) means total/DefaultShare.
func NewBudget(total, share int64) *Budget {
	if total <= 0 {
		return nil
	}
	if share <= 0 || share > total {
		share = total / DefaultShare
	}
	return &Budget{total: total, share: share, held: map[string]int64{}}
}

// TryTake takes n bytes for the client of keys, if they are free in the
// budget and within each key's share, and reports whether it did.
func (b *Budget) TryTake(n int64, keys ...string) bool {
	return b.take(n, 0, keys)
}

// TryGrow takes n more bytes for a request that holds some already, if a
// quarter of the budget stays free after and each key stays within its
// share: requests in flight may grow into three quarters of it, and the
// last quarter is kept for newcomers to start with, so that a few large
// requests never lock everyone else out.
func (b *Budget) TryGrow(n int64, keys ...string) bool {
	if b == nil {
		return true
	}
	return b.take(n, b.total/4, keys)
}

// take takes n bytes for keys if keep bytes of the budget stay free.
func (b *Budget) take(n, keep int64, keys []string) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total-keep {
		return false
	}
	for _, k := range keys {
		if b.held[k]+n > b.share {
			return false
		}
	}
	b.used += n
	for _, k := range keys {
		b.held[k] += n
	}
	return true
}

// Give returns n bytes taken before for the same keys.
func (b *Budget) Give(n int64, keys ...string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("limit: budget given back more than was taken")
	}
	for _, k := range keys {
		switch left := b.held[k] - n; {
		case left > 0:
			b.held[k] = left
		case left == 0:
			delete(b.held, k)
		default:
			panic("limit: budget given back for a key more than it took")
		}
	}
}

// InUse returns the bytes taken now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Held returns the bytes key holds now.
func (b *Budget) Held(key string) int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[key]
}

// Total returns the size of the budget; zero for a nil Budget.
func (b *Budget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// Share returns the most one key holds at once; zero for a nil Budget.
func (b *Budget) Share() int64 {
	if b == nil {
		return 0
	}
	return b.share
}

// RetryAfter is the Retry-After a request refused for want of a budget
// is given: long enough for a listing in flight to end, short enough
// that a client retrying is not kept waiting for nothing.
const RetryAfter = 2 * time.Second
