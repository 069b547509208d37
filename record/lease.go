package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"largo"
	"largo/internal/process"
)

// ErrHeld is a lease another holder holds.
var ErrHeld = errors.New("held by another instance")

// ErrLost is a lease that is no longer this holder's: it expired and was
// taken over, or its record was removed.
var ErrLost = errors.New("the lease was lost")

// leaseRecord is a lease's record.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Expires time.Time `json:"expires"`
}

// live reports whether rec still holds its lease at now: it has not
// expired, and its holder is not a process of this machine that is gone
// (a server restarted after a crash takes its leases back at once, not
// after their life).
func (s *Store) live(rec leaseRecord) bool {
	if !s.now().Before(rec.Expires) {
		return false
	}
	gone := process.Known && rec.Host != "" && rec.Host == s.host && rec.PID > 0 && rec.PID != s.pid && !process.Alive(rec.PID)
	return !gone
}

// Lease is one instance's hold on a job (a key of the state area): while
// it holds it, no other instance does. It lasts ttl unless renewed. Make
// one with Store.Acquire; it is safe for concurrent use.
type Lease struct {
	s   *Store
	key string
	ttl time.Duration

	mu     sync.Mutex
	ver    string
	good   time.Time // the holder may act until then
	lost   bool
	cancel context.CancelFunc // the renewals of Keep, nil when not kept
	done   chan struct{}
}

// Acquire takes the lease key for ttl: created where none is, taken
// over where its holder let it expire or is a process of this machine
// that is gone, renewed where it is already this Store's; an error
// wrapping ErrHeld while another holds it.
func (s *Store) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	for try := 0; try < MaxTries; try++ {
		if try > 0 {
			if err := s.pause(ctx, try); err != nil {
				return nil, err
			}
		}
		start := s.now()
		b := s.leaseBytes(start, ttl)
		err := s.create(ctx, key, b)
		if err == nil {
			return &Lease{s: s, key: key, ttl: ttl, ver: s.createdVersion(b), good: start.Add(ttl / 2)}, nil
		}
		if !errors.Is(err, largo.ErrExist) {
			return nil, err
		}
		old, ver, err := s.getVersion(ctx, key)
		if errors.Is(err, largo.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		var rec leaseRecord
		if json.Unmarshal(old, &rec) == nil && rec.Holder != s.holder && s.live(rec) {
			return nil, fmt.Errorf("%s until %s: %w", key, rec.Expires.UTC().Format(time.RFC3339), ErrHeld)
		}
		nv, err := s.swap(ctx, key, b, ver)
		if err == nil {
			return &Lease{s: s, key: key, ttl: ttl, ver: nv, good: start.Add(ttl / 2)}, nil
		}
		if !errors.Is(err, largo.ErrPrecondition) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("lease %s: %w", key, ErrConflict)
}

// createdVersion is the version of b just created, where it can be
// told without a read: the state's own (a bucket's ETag) is learnt at
// the first renewal.
func (s *Store) createdVersion(b []byte) string {
	if !s.swaps() {
		return string(b)
	}
	return ""
}

// leaseBytes is this Store's record of a lease taken or renewed at now.
func (s *Store) leaseBytes(now time.Time, ttl time.Duration) []byte {
	b, _ := json.Marshal(leaseRecord{Holder: s.holder, Host: s.host, PID: s.pid, Expires: now.Add(ttl)})
	return b
}

// Holding reports whether the lease may still be acted on: it has not
// been lost, released, nor gone half its life without a renewal (well
// before another instance may take it over).
func (l *Lease) Holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lost && l.s.now().Before(l.good)
}

// Renew extends the lease by its ttl from now, only as this holder left
// it; an error wrapping ErrLost when another took it over or it is gone.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return fmt.Errorf("lease %s: %w", l.key, ErrLost)
	}
	ver := l.ver
	if ver == "" {
		// Created without learning its version: read it, and make sure
		// it is still ours.
		b, v, err := l.s.getVersion(ctx, l.key)
		if errors.Is(err, largo.ErrNotFound) {
			l.lost = true
			return fmt.Errorf("lease %s: %w", l.key, ErrLost)
		}
		if err != nil {
			return err
		}
		var rec leaseRecord
		if json.Unmarshal(b, &rec) != nil || rec.Holder != l.s.holder {
			l.lost = true
			return fmt.Errorf("lease %s: %w", l.key, ErrLost)
		}
		ver = v
	}
	start := l.s.now()
	nv, err := l.s.swap(ctx, l.key, l.s.leaseBytes(start, l.ttl), ver)
	if errors.Is(err, largo.ErrPrecondition) {
		l.lost = true
		return fmt.Errorf("lease %s: %w", l.key, ErrLost)
	}
	if err != nil {
		return err
	}
	l.ver, l.good = nv, start.Add(l.ttl/2)
	return nil
}

// Keep renews the lease every quarter of its life, in a goroutine of its
// own, until Release or ctx is done; a renewal that finds the lease lost
// stops. Holding tells whether it still holds.
func (l *Lease) Keep(ctx context.Context) {
	l.mu.Lock()
	if l.cancel != nil {
		l.mu.Unlock()
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	l.mu.Unlock()
	go func() {
		defer close(l.done)
		t := time.NewTicker(max(l.ttl/4, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if errors.Is(l.Renew(ctx), ErrLost) {
					return
				}
			}
		}
	}()
}

// Release stops Keep's renewals, waits for them, and removes the lease's
// record if it is still this holder's, so that another instance may take
// the job at once. It is safe to call more than once.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return nil
	}
	l.lost = true
	ver := l.ver
	if ver == "" {
		// Never renewed: its version is read, and that it is ours.
		b, v, err := l.s.getVersion(ctx, l.key)
		if errors.Is(err, largo.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var rec leaseRecord
		if json.Unmarshal(b, &rec) != nil || rec.Holder != l.s.holder {
			return nil // another's now
		}
		ver = v
	}
	// Removed only as this holder left it: another's since is kept.
	err := l.s.deleteIf(ctx, l.key, ver)
	if errors.Is(err, largo.ErrPrecondition) || errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	return err
}

// SweepLeases removes the records of the leases under prefix that no one
// holds any more (expired, or of a process of this machine that is gone:
// their holders stopped without releasing them), each only as it was
// read, so that one taken over meanwhile stays; a record that is no
// lease's holds nothing and goes too. It returns how many it removed.
// Any instance may sweep, and several at once do no harm.
func (s *Store) SweepLeases(ctx context.Context, prefix string) (int, error) {
	var keys []string
	for rec, err := range s.st.List(ctx, prefix) {
		if err != nil {
			return 0, err
		}
		keys = append(keys, rec.Key)
	}
	n := 0
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		b, ver, err := s.getVersion(ctx, key)
		if err != nil {
			continue // gone, or left for the next sweep
		}
		var rec leaseRecord
		if json.Unmarshal(b, &rec) == nil && s.live(rec) {
			continue
		}
		if s.deleteIf(ctx, key, ver) == nil {
			n++
		}
	}
	return n, nil
}
