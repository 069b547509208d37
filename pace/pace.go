// Package pace shares bandwidth caps by key, so that a cap cannot be
// bypassed by opening more connections: every transfer of one user, of
// one client address, or through one share link draws on one token
// bucket of that key, however many connections carry them. A transfer may
// also have a bucket of its own (a cap per transfer). A transfer waits on
// every bucket that applies to it, so the strictest governs.
//
// The buckets are golang.org/x/time/rate limiters counted in bytes. Each
// holds an eighth of a second of its rate (Burst: at least 32 KiB), and a
// transfer asks for at most a quantum at once (Quantum: the burst, at
// most 16 MiB): a download waits for a quantum's worth of tokens and then
// hands the kernel that many bytes to send (sendfile stays on, nothing is
// copied), and an upload, having read a quantum, waits for its tokens
// before it reads on. A bucket larger than the quantum banks what the
// transfers of a fast key leave unused while they are busy sending (an
// eighth of a second's worth), so that the time sendfile takes is not
// lost to the rate. Waiting for several buckets reserves the bytes in each at
// once and sleeps for the longest delay, so the bytes are counted once in
// every bucket and a bucket that is not the strictest is not made to wait
// twice. The two directions are separate: a cap of 10 MB/s lets a user
// download at 10 MB/s while uploading at 10 MB/s.
//
// The keys are bounded: a key is held while a transfer of it is in
// flight; when its last transfer ends, its bucket is forgotten if it is
// full (the same as a new one), and otherwise kept, still refilling,
// among at most Config.MaxKeys idle keys (internal/lru): past them the
// least recently used is forgotten, which gives it at most one burst
// back, never every idle key at once. So a client with many addresses
// cannot grow the keys beyond the transfers in flight (which the
// connection limits bound) and MaxKeys, nor wipe a recent key's debt by
// making new ones.
package pace

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"largo/internal/lru"
)

// Kind is what a bucket is kept for.
type Kind uint8

// The kinds of bucket.
const (
	// Transfer is one request's own bucket, shared with nothing.
	Transfer Kind = iota
	// User is shared by every transfer of one signed-in user, and of the
	// share links that user made.
	User
	// Address is shared by every transfer from one client address (an
	// IPv6 /64 counts as one address).
	Address
	// Link is shared by every transfer through one share link.
	Link
)

// Kinds lists every Kind, for metrics that want a series per kind from
// the start.
var Kinds = []Kind{Transfer, User, Address, Link}

// String returns the kind's name, as metric labels and the log show it.
func (k Kind) String() string {
	switch k {
	case Transfer:
		return "transfer"
	case User:
		return "user"
	case Address:
		return "address"
	case Link:
		return "link"
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Direction is which way the bytes of a transfer go.
type Direction uint8

// The directions, each with buckets of its own.
const (
	Send    Direction = iota // to the client: downloads
	Receive                  // from the client: uploads
)

// Key names one shared bucket and says its rate.
type Key struct {
	Kind Kind
	// Name is the user's name, the link's ID or the address
	// (largo.ClientName: an IPv6 /64 counts as one address).
	Name string
	// Rate is the bucket's rate in bytes per second; zero or less caps
	// nothing (the key is then ignored). A key's rate may change between
	// transfers (an access file reloaded): the bucket takes the rate of
	// the latest transfer that starts.
	Rate int64
}

// Bounds of a bucket's burst and of the largest wait.
const (
	minQuantum = 32 << 10 // the smallest burst
	// maxQuantum is the largest wait. Each burst of a paced download
	// costs the sender more per byte than a steady stream (the socket
	// starts empty, and the client waits for it): on loopback, quanta
	// of 16 MiB cost 0.27 CPU seconds per GiB sent where 4 MiB cost
	// 0.38 and 1 MiB 0.55 (docs/BENCHMARKS.md).
	maxQuantum = 16 << 20
)

// DefaultMaxKeys is how many keys Limits keeps without a transfer in
// flight, unless Config.MaxKeys says otherwise.
const DefaultMaxKeys = 4096

// Burst returns the burst of a bucket of rate bytes per second: an eighth
// of a second's worth, at least 32 KiB. A full bucket lets that much pass
// at once.
func Burst(rate int64) int {
	return int(max(rate/8, minQuantum))
}

// Quantum returns the most one wait asks of a bucket of rate bytes per
// second: its burst, at most 16 MiB.
func Quantum(rate int64) int {
	return min(Burst(rate), maxQuantum)
}

// Config configures Limits. The zero value caps nothing.
type Config struct {
	// Transfer, User, Address and Link are the default rates of each kind,
	// in bytes per second; zero caps nothing. Callers read them with
	// Default and may give a key another rate (a user's own, from the
	// access file).
	Transfer, User, Address, Link int64
	// MaxKeys is how many keys are kept without a transfer in flight;
	// zero means DefaultMaxKeys.
	MaxKeys int
	// Throttled, when set, is called after every wait that delayed a
	// transfer, with how long it waited and the kind of the bucket that
	// made it wait longest. It must be safe for concurrent use.
	Throttled func(kind Kind, d time.Duration)
	// Now is the clock; nil means time.Now. Waits sleep on real timers.
	Now func() time.Time
}

// Limits holds the shared buckets. It is safe for concurrent use.
type Limits struct {
	cfg Config

	mu   sync.Mutex
	busy map[bucketKey]*bucket // the keys of transfers in flight
	// idle are the keys without a transfer whose buckets are refilling.
	idle *lru.Cache[bucketKey, *bucket]
}

type bucketKey struct {
	kind Kind
	dir  Direction
	name string
}

// bucket is a shared bucket and the transfers holding it.
type bucket struct {
	key  bucketKey
	lim  *rate.Limiter
	rate int64
	held int // transfers in flight; guarded by Limits.mu
}

// New returns the Limits of cfg.
func New(cfg Config) *Limits {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limits{cfg: cfg, busy: map[bucketKey]*bucket{}, idle: lru.New[bucketKey, *bucket](cfg.MaxKeys)}
}

// Default returns the default rate of kind, in bytes per second (zero:
// none).
func (l *Limits) Default(kind Kind) int64 {
	switch kind {
	case Transfer:
		return l.cfg.Transfer
	case User:
		return l.cfg.User
	case Address:
		return l.cfg.Address
	case Link:
		return l.cfg.Link
	}
	return 0
}

// Keys returns how many keys are held now, in flight or idle.
func (l *Limits) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.busy) + l.idle.Len()
}

// maxKeysOfTransfer bounds the keys one transfer waits on: its own, and
// one of each shared kind, a link's holder also waiting on its maker's.
const maxKeysOfTransfer = 5

// Start returns the Pacer of a transfer in direction dir that waits on the
// shared buckets of keys (those with a rate) and, when Config.Transfer
// is set, on a bucket of its own; nil when none applies. Close the Pacer
// when the transfer ends.
func (l *Limits) Start(dir Direction, keys ...Key) *Pacer {
	if l == nil {
		return nil
	}
	shared := false
	for _, k := range keys {
		shared = shared || k.Rate > 0 && k.Kind != Transfer
	}
	if !shared && l.cfg.Transfer <= 0 {
		return nil // nothing to wait on: nothing made
	}
	p := &Pacer{l: l, quantum: maxQuantum}
	if r := l.cfg.Transfer; r > 0 {
		p.add(Transfer, rate.NewLimiter(rate.Limit(r), Burst(r)), nil)
	}
	if shared {
		l.mu.Lock()
		defer l.mu.Unlock()
		now := l.cfg.Now()
		for _, k := range keys {
			if k.Rate <= 0 || k.Kind == Transfer || p.n == maxKeysOfTransfer {
				continue
			}
			b := l.hold(bucketKey{k.Kind, dir, k.Name}, k.Rate, now)
			if slices.Contains(p.held[:p.n], b) {
				b.held-- // one key given twice: its bucket counts once
				continue
			}
			p.add(k.Kind, b.lim, b)
		}
	}
	if p.n == 0 {
		return nil
	}
	return p
}

// hold returns the bucket of k at rate, made if there is none, with one
// more transfer holding it. l.mu is held.
func (l *Limits) hold(k bucketKey, r int64, now time.Time) *bucket {
	b := l.busy[k]
	if b == nil {
		if b, _ = l.idle.Get(k); b != nil {
			l.idle.Remove(k)
		} else {
			b = &bucket{key: k, lim: rate.NewLimiter(rate.Limit(r), Burst(r)), rate: r}
		}
		l.busy[k] = b
	}
	if b.rate != r {
		b.lim.SetLimitAt(now, rate.Limit(r))
		b.lim.SetBurstAt(now, Burst(r))
		b.rate = r
	}
	b.held++
	return b
}

// release lets go of the buckets p held: one no transfer holds any more
// is forgotten if it is full, else kept among the idle keys.
func (l *Limits) release(p *Pacer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	for _, b := range p.held[:p.n] {
		if b == nil {
			continue
		}
		if b.held--; b.held > 0 {
			continue
		}
		delete(l.busy, b.key)
		if b.lim.TokensAt(now) < float64(b.lim.Burst()) {
			l.idle.Add(b.key, b)
		}
	}
}

// Pacer paces one transfer in one direction by the buckets that apply to
// it. Wait is called by one goroutine at a time; Close may be called from
// another once the transfer is over.
type Pacer struct {
	l       *Limits
	n       int
	lims    [maxKeysOfTransfer]*rate.Limiter
	kinds   [maxKeysOfTransfer]Kind
	held    [maxKeysOfTransfer]*bucket // nil for the transfer's own
	quantum int
	timer   *time.Timer
	once    sync.Once
}

func (p *Pacer) add(kind Kind, lim *rate.Limiter, b *bucket) {
	p.lims[p.n], p.kinds[p.n], p.held[p.n] = lim, kind, b
	p.quantum = min(p.quantum, lim.Burst())
	p.n++
}

// Quantum returns the most bytes one Wait waits for at once: a transfer
// that sends no more than this after each Wait is paced smoothly.
func (p *Pacer) Quantum() int { return p.quantum }

// Wait blocks until n more bytes may go, by every bucket of the transfer,
// or until ctx is done (then it returns ctx's error, and the bytes not
// yet waited for are given back).
func (p *Pacer) Wait(ctx context.Context, n int) error {
	for n > 0 {
		k := n
		for _, lim := range p.lims[:p.n] {
			k = min(k, lim.Burst()) // a rate reloaded meanwhile may have shrunk it
		}
		rs, delay, kind := p.reserve(p.l.cfg.Now(), k)
		if delay > 0 {
			start := time.Now()
			if err := p.sleep(ctx, delay); err != nil {
				at := p.l.cfg.Now()
				for _, r := range rs[:p.n] {
					r.CancelAt(at)
				}
				return err
			}
			if p.l.cfg.Throttled != nil {
				p.l.cfg.Throttled(kind, time.Since(start))
			}
		}
		n -= k
	}
	return nil
}

// reserve takes n bytes (at most every bucket's burst) from every bucket
// at now, and returns the reservations, the longest delay and the kind of
// the bucket that asks for it.
func (p *Pacer) reserve(now time.Time, n int) (rs [maxKeysOfTransfer]*rate.Reservation, delay time.Duration, kind Kind) {
	for i, lim := range p.lims[:p.n] {
		rs[i] = lim.ReserveN(now, n)
		if d := rs[i].DelayFrom(now); d > delay {
			delay, kind = d, p.kinds[i]
		}
	}
	return rs, delay, kind
}

// sleep waits for d or for ctx, on one timer per Pacer.
func (p *Pacer) sleep(ctx context.Context, d time.Duration) error {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	}
}

// Close ends the transfer: its shared buckets may be forgotten once they
// are full again. Closing twice, or a nil Pacer, does nothing.
func (p *Pacer) Close() {
	if p == nil {
		return
	}
	p.once.Do(func() { p.l.release(p) })
}
