package resumable

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/internal/process"
)

// Appends to one upload through several servers sharing a store are
// serialised by leases: a record per upload in the state area, created
// only where none is (largo.StateCreator), renewed while the append runs
// and removed when it ends, each only as it was read
// (largo.StateSwapper). An append that finds another server's live lease
// is refused before it reads a byte: 423 for tus (as tusd answers a
// locked upload), 409 for the IETF protocol (a conflict the client
// resolves by retrieving the offset). A lease that its server stopped
// renewing (it died) expires after DefaultLease and is taken over; one of
// a process of this machine that is gone (a server restarted after a
// crash) at once.
//
// Within one server keylock and the flights (ietfflight.go) order the
// requests first: the lease is only met by requests through another.

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

// leases takes and renews the leases of one server. A nil *leases takes
// none (a state area without conditional writes): appends are then
// serialised within one server only.
type leases struct {
	st     largo.State
	sc     largo.StateCreator
	sw     largo.StateSwapper
	ttl    time.Duration
	now    func() time.Time
	holder string // this server's, in its records
	host   string // this machine's name
	pid    int    // this process's
}

// newLeases returns the leases kept in st, or nil when st cannot write
// conditionally.
func newLeases(st largo.State, ttl time.Duration, now func() time.Time) *leases {
	sc, ok := st.(largo.StateCreator)
	sw, ok2 := st.(largo.StateSwapper)
	if !ok || !ok2 {
		return nil
	}
	if ttl <= 0 {
		ttl = DefaultLease
	}
	var b [12]byte
	rand.Read(b[:])
	host, _ := os.Hostname()
	return &leases{st: st, sc: sc, sw: sw, ttl: ttl, now: now, holder: hex.EncodeToString(b[:]), host: host, pid: os.Getpid()}
}

// leaseRecord is a lease's record.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Expires time.Time `json:"expires"`
}

// held reports whether rec holds its upload still: it has not expired,
// and its server is not a process of this machine that is gone (a server
// restarted after a crash takes its own appends back at once, not after
// the lease's life).
func (ls *leases) held(rec leaseRecord) bool {
	if !ls.now().Before(rec.Expires) {
		return false
	}
	gone := process.Known && rec.Host != "" && rec.Host == ls.host && rec.PID > 0 && rec.PID != ls.pid && !process.Alive(rec.PID)
	return !gone
}

func leaseKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return leasePrefix + hex.EncodeToString(sum[:16])
}

// lease is an append's hold on an upload, renewed until released.
type lease struct {
	ls   *leases
	key  string
	mu   sync.Mutex
	ver  string
	good time.Time // bytes may be taken until then
	stop chan struct{}
	done chan struct{}
}

// record returns this server's record of a lease taken or renewed now.
func (ls *leases) record() []byte {
	b, _ := json.Marshal(leaseRecord{Holder: ls.holder, Host: ls.host, PID: ls.pid, Expires: ls.now().Add(ls.ttl)})
	return b
}

// take takes the lease of upload id, or fails with an error wrapping
// errBusy while another server holds it. A nil ls takes nothing, and
// neither does one on a store that turns out not to apply conditions to
// writes (an S3 server that ignores them): appends are then serialised
// within one server only, as they would be without leases.
func (ls *leases) take(ctx context.Context, id string) (*lease, error) {
	if ls == nil {
		return nil, nil
	}
	key := leaseKey(id)
	for range 3 {
		start := ls.now()
		b := ls.record()
		err := ls.sc.Create(ctx, key, b)
		if errors.Is(err, largo.ErrUnsupported) {
			return nil, nil
		}
		if err == nil {
			got, ver, err := ls.sw.GetVersion(ctx, key)
			if err != nil {
				return nil, err
			}
			if string(got) != string(b) {
				continue // expired and taken over already: improbable, but not ours
			}
			return ls.start(key, ver, start), nil
		}
		if !errors.Is(err, largo.ErrExist) {
			return nil, err
		}
		old, ver, err := ls.sw.GetVersion(ctx, key)
		if errors.Is(err, largo.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		var rec leaseRecord
		if json.Unmarshal(old, &rec) == nil && ls.held(rec) {
			return nil, fmt.Errorf("upload %s: %w: %w", id, errBusy, tusLocked)
		}
		ver, err = ls.sw.Swap(ctx, key, b, ver)
		if errors.Is(err, largo.ErrPrecondition) {
			return nil, fmt.Errorf("upload %s: %w: %w", id, errBusy, tusLocked)
		}
		if err != nil {
			return nil, err
		}
		return ls.start(key, ver, start), nil
	}
	return nil, fmt.Errorf("upload %s: %w: %w", id, errBusy, tusLocked)
}

// sweep removes the records of leases that expired (their servers died
// appending), each only if no one took it over meanwhile, and returns how
// many it removed.
func (ls *leases) sweep(ctx context.Context) (int, error) {
	if ls == nil {
		return 0, nil
	}
	var keys []string
	for rec, err := range ls.st.List(ctx, leasePrefix) {
		if err != nil {
			return 0, err
		}
		keys = append(keys, rec.Key)
	}
	n := 0
	for _, key := range keys {
		b, ver, err := ls.sw.GetVersion(ctx, key)
		if err != nil {
			continue // gone, or to be swept next time
		}
		var rec leaseRecord
		if json.Unmarshal(b, &rec) == nil && ls.held(rec) {
			continue
		}
		if ls.sw.DeleteIf(ctx, key, ver) == nil {
			n++
		}
	}
	return n, nil
}

// start begins renewing a lease just taken at start.
func (ls *leases) start(key, ver string, start time.Time) *lease {
	le := &lease{ls: ls, key: key, ver: ver, good: start.Add(ls.ttl / 2), stop: make(chan struct{}), done: make(chan struct{})}
	go le.renew()
	return le
}

// renew renews the lease every quarter of its life until it is released
// or lost (another took it over).
func (le *lease) renew() {
	defer close(le.done)
	t := time.NewTicker(le.ls.ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-le.stop:
			return
		case <-t.C:
		}
		start := le.ls.now()
		b := le.ls.record()
		le.mu.Lock()
		ver := le.ver
		le.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), le.ls.ttl/4)
		nv, err := le.ls.sw.Swap(ctx, le.key, b, ver)
		cancel()
		le.mu.Lock()
		switch {
		case err == nil:
			le.ver, le.good = nv, start.Add(le.ls.ttl/2)
		case errors.Is(err, largo.ErrPrecondition):
			le.good = time.Time{} // lost: taken over
		}
		// Any other error: tried again at the next tick; good runs out.
		le.mu.Unlock()
		if errors.Is(err, largo.ErrPrecondition) {
			return
		}
	}
}

// valid reports whether the lease still lets the append take bytes.
func (le *lease) valid() bool {
	if le == nil {
		return true
	}
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.ls.now().Before(le.good)
}

// release ends the lease: its renewal stops and its record goes, if it
// is still the one this server wrote.
func (le *lease) release() {
	if le == nil {
		return
	}
	close(le.stop)
	<-le.done
	le.mu.Lock()
	ver := le.ver
	lost := le.good.IsZero()
	le.mu.Unlock()
	if lost {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), le.ls.ttl/4)
	defer cancel()
	le.ls.sw.DeleteIf(ctx, le.key, ver)
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
