package resumable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/record"
)

// Appends to one upload through several servers sharing a store are
// serialised by leases (record.Lease): a record per upload in the state
// area, created only where none is, renewed while the append runs and
// removed when it ends, each only as it was read. An append that finds
// another server's live lease is refused before it reads a byte: 423 for
// tus (as tusd answers a locked upload), 409 for the IETF protocol (a
// conflict the client resolves by retrieving the offset). A lease that
// its server stopped renewing (it died) expires after DefaultLease and is
// taken over; one of a process of this machine that is gone (a server
// restarted after a crash) at once.
//
// Within one server keylock and the flights (ietfflight.go) order the
// requests first: the lease is only met by requests through another, and
// by the sweep of abandoned uploads (Expire), which leaves an upload
// alone while an append through its own server holds it.

// DefaultLease is how long an append's lease lasts unless renewed, when
// Config.Lease is zero. It is renewed every quarter of it, and the
// append stops taking bytes once half of it has passed without a renewal,
// well before another server may take the lease over.
const DefaultLease = time.Minute

// leasePrefix is where the leases are in the state area.
const leasePrefix = "uploads/leases/"

// errBusy is an append refused because another server appends to the
// upload. It travels wrapped with tusLocked, the refusal tus answers.
var errBusy = errors.New("another server is appending to this upload")

var tusLocked = tusError("ERR_UPLOAD_LOCKED", "upload locked: another server is appending to it; retry after it ends", http.StatusLocked)

// leases takes the leases of one server's appends: record.Lease, each
// kept (renewed every quarter of its life) while its append runs. A nil
// *leases takes none (a state area without conditional writes): appends
// are then serialised within one server only.
type leases struct {
	rs  *record.Store
	ttl time.Duration

	mu sync.Mutex
	// mine are the uploads this server holds a lease on: a second take
	// through this server (the sweep of abandoned uploads beside an
	// append) is busy too, where the record layer would renew the lease
	// it already holds.
	mine map[string]bool
}

// newLeases returns the leases kept in st, or nil when st cannot write
// conditionally.
func newLeases(st largo.State, ttl time.Duration, now func() time.Time) *leases {
	rs := record.New(st, record.Options{Now: now})
	if !rs.Conditional() {
		return nil
	}
	if ttl <= 0 {
		ttl = DefaultLease
	}
	return &leases{rs: rs, ttl: ttl, mine: map[string]bool{}}
}

func leaseKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return leasePrefix + hex.EncodeToString(sum[:16])
}

// lease is an append's hold on an upload, kept until released.
type lease struct {
	ls *leases
	id string
	l  *record.Lease
}

// take takes the lease of upload id, kept until released or ctx is done,
// or fails with an error wrapping errBusy while another append holds
// it. A nil ls takes nothing, and neither does one on a store that turns
// out not to apply conditions to writes (an S3 server that ignores them):
// appends are then serialised within one server only, as they would be
// without leases.
func (ls *leases) take(ctx context.Context, id string) (*lease, error) {
	if ls == nil || !ls.rs.Conditional() {
		return nil, nil
	}
	busy := fmt.Errorf("upload %s: %w: %w", id, errBusy, tusLocked)
	ls.mu.Lock()
	if ls.mine[id] {
		ls.mu.Unlock()
		return nil, busy
	}
	ls.mine[id] = true
	ls.mu.Unlock()
	l, err := ls.rs.Acquire(ctx, leaseKey(id), ls.ttl)
	switch {
	case errors.Is(err, record.ErrHeld) || errors.Is(err, record.ErrConflict):
		err = busy
	case err == nil && !ls.rs.Conditional():
		// The store refused the condition: the lease was made under
		// this server's own lock, and guards nothing more than it does.
		le := &lease{ls: ls, id: id, l: l}
		le.release()
		return nil, nil
	case err == nil:
		l.Keep(ctx)
		return &lease{ls: ls, id: id, l: l}, nil
	}
	ls.forget(id)
	return nil, err
}

// forget ends this server's hold on upload id.
func (ls *leases) forget(id string) {
	ls.mu.Lock()
	delete(ls.mine, id)
	ls.mu.Unlock()
}

// sweep removes the records of leases that expired (their servers died
// appending), each only if no one took it over meanwhile, and returns how
// many it removed.
func (ls *leases) sweep(ctx context.Context) (int, error) {
	if ls == nil {
		return 0, nil
	}
	return ls.rs.SweepLeases(ctx, leasePrefix)
}

// valid reports whether the lease still lets the append take bytes: it
// was not lost, and half its life has not passed without a renewal.
func (le *lease) valid() bool {
	return le == nil || le.l.Holding()
}

// release ends the lease: its renewals stop and its record goes, if it
// is still the one this server wrote, even when the append's client
// left.
func (le *lease) release() {
	if le == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), le.ls.ttl/4)
	defer cancel()
	le.l.Release(ctx)
	le.ls.forget(le.id)
}

// movedError is an append at an offset the upload left while another
// server appended to it.
type movedError struct{ offset int64 }

func (e *movedError) Error() string {
	return fmt.Sprintf("the upload moved to offset %d through another server", e.offset)
}

// Unwrap makes tus answer it as the offset mismatch it is (409).
func (e *movedError) Unwrap() error { return tusd.ErrMismatchOffset }

// errLeaseLost ends an append whose lease ran out unrenewed.
var errLeaseLost = errors.New("the upload's lease ran out: the append stopped")

// leasedReader stops taking bytes once the lease runs out.
type leasedReader struct {
	r  io.Reader
	le *lease
}

func (l *leasedReader) Read(p []byte) (int, error) {
	if !l.le.valid() {
		return 0, errLeaseLost
	}
	n, err := l.r.Read(p)
	if n > 0 && !l.le.valid() {
		return 0, errLeaseLost
	}
	return n, err
}
