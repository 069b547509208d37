package limit

import (
	"sync"
	"time"
)

// Budget is an amount of memory, in bytes, shared by the requests whose
// work grows with the data (listings, archives): each takes what it needs
// before it allocates, in steps, and gives it back when done. Nothing ever
// waits for a budget: a request that cannot get what it must have is
// answered 503 with a Retry-After, and one that cannot get more makes do
// with what it holds (a listing spills to disk sooner). A Budget is safe
// for concurrent use; a nil *Budget caps nothing.
type Budget struct {
	mu    sync.Mutex
	total int64
	used  int64
}

// NewBudget returns a Budget of total bytes; zero or less caps nothing.
func NewBudget(total int64) *Budget {
	if total <= 0 {
		return nil
	}
	return &Budget{total: total}
}

// TryTake takes n bytes if they are free and reports whether it did.
func (b *Budget) TryTake(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total {
		return false
	}
	b.used += n
	return true
}

// TryGrow takes n more bytes for a request that holds some already, if a
// quarter of the budget stays free after: requests in flight may grow
// into three quarters of it, and the last quarter is kept for newcomers
// to start with, so that a few large requests never lock everyone else
// out.
func (b *Budget) TryGrow(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total-b.total/4 {
		return false
	}
	b.used += n
	return true
}

// Give returns n bytes taken before.
func (b *Budget) Give(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("limit: budget given back more than was taken")
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

// Total returns the size of the budget; zero for a nil Budget.
func (b *Budget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// RetryAfter is the Retry-After a request refused for want of a budget
// is given: long enough for a listing in flight to end, short enough
// that a client retrying is not kept waiting for nothing.
const RetryAfter = 2 * time.Second
