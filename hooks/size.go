package hooks

import (
	"context"
	"errors"
	"slices"
	"time"

	"largo"
)

// The outbox's bound is kept by every server that queues: each admits an
// event only while what the outbox and its dead letters hold, as it
// knows it, leaves room. The sender knows it best: it counts the keys
// (each tells its body's length) when it takes the lease and, on a tick,
// while the outbox is backed up or near its bound, and keeps the count
// up to date with what it queues and removes; it records what it counted
// (under sizesKey) for the others, which read it on each tick and add
// what they queued since. Every estimate errs on the side of more: what
// is being written while a count lists the keys is counted whether or
// not the listing saw it.

// outboxSize is what the outbox and its dead letters hold, as counted
// at At.
type outboxSize struct {
	Events     int64     `json:"events"`
	Bytes      int64     `json:"bytes"`
	DeadEvents int64     `json:"dead_events"`
	DeadBytes  int64     `json:"dead_bytes"`
	At         time.Time `json:"at"`
}

// tally is a count of events and their bytes.
type tally struct{ n, bytes int64 }

// queued is an event this server queued while another sends: the
// sender's count holds it once its record was written before the count.
type queued struct {
	at   time.Time // when it was queued (its key's time)
	n    int64
	done time.Time // when its record was written; zero: not yet, or never
}

// fullLocked reports whether an event of n bytes would take the outbox
// past its bound; if so, it is dropped, counted once in the log per run
// of drops.
func (h *Hooks) fullLocked(n int64) bool {
	s := h.size
	if s.Events+s.DeadEvents+1 <= int64(h.cfg.MaxEvents) && s.Bytes+s.DeadBytes+n <= h.cfg.MaxBytes {
		if h.dropped > 0 {
			h.log.Warn("the notifications' outbox has room again", "dropped", h.dropped)
			h.dropped = 0
		}
		return false
	}
	if h.dropped == 0 {
		h.log.Warn("the notifications' outbox is full: new events are dropped until it has room",
			"events", s.Events, "dead_letters", s.DeadEvents, "bytes", s.Bytes+s.DeadBytes,
			"max_events", h.cfg.MaxEvents, "max_bytes", h.cfg.MaxBytes)
	}
	h.dropped++
	h.recount = true
	return true
}

// addLocked counts an event of n bytes admitted: q is its place among the
// events queued while another server sends, nil for none.
func (h *Hooks) addLocked(n int64, q *queued) {
	h.size.Events++
	h.size.Bytes += n
	h.flying.n++
	h.flying.bytes += n
	h.reserved.n++
	h.reserved.bytes += n
	if q != nil {
		if len(h.recent) >= h.cfg.MaxEvents {
			h.recent = h.recent[1:]
		}
		h.recent = append(h.recent, q)
	}
}

// landedLocked notes that the write of an event of n bytes ended: ok, or
// not (then it is no longer counted).
func (h *Hooks) landedLocked(q *queued, n int64, ok bool) {
	h.flying.n--
	h.flying.bytes -= n
	switch {
	case ok && q != nil:
		q.done = h.cfg.Now()
	case !ok:
		h.size.Events, h.size.Bytes = max(h.size.Events-1, 0), max(h.size.Bytes-n, 0)
		if i := slices.Index(h.recent, q); q != nil && i >= 0 {
			h.recent = slices.Delete(h.recent, i, i+1)
		}
	}
}

// removedLocked uncounts the event keyed key, of n bytes, gone from the
// outbox (delivered, parked, or no notification): if this server counted
// it, as it queued it (mine) or in a count (queued before it); and counts
// it among the dead letters if parked.
func (h *Hooks) removedLocked(key string, n int64, mine, parked bool) {
	if at, _, _ := keyInfo(key); mine || !at.After(h.size.At) {
		h.size.Events, h.size.Bytes = max(h.size.Events-1, 0), max(h.size.Bytes-n, 0)
	}
	if parked {
		h.size.DeadEvents++
		h.size.DeadBytes += n
	}
}

// depth is the outbox's count of events, as this server knows it.
func (h *Hooks) depth() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(h.size.Events)
}

// needCount reports whether the sender should count the outbox on this
// tick: it has not since it took the lease; events were dropped (the
// dead letters may have been retried or dropped beside it); or, at most
// every three polls, it is backed up or near its bounds (others may
// queue).
func (h *Hooks) needCount() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.size
	near := 2*(s.Events+s.DeadEvents) >= int64(h.cfg.MaxEvents) || 2*(s.Bytes+s.DeadBytes) >= h.cfg.MaxBytes
	due := h.cfg.Now().Sub(h.s.counted) >= 3*h.cfg.Poll
	return h.recount || h.s.counted.IsZero() || due && (!h.s.clear || near)
}

// count lists the outbox's and the dead letters' keys (without reading
// them: a key tells its body's length) and takes the size they tell, with
// what this server was writing meanwhile.
func (h *Hooks) count(ctx context.Context) error {
	s := outboxSize{At: h.cfg.Now().UTC()}
	h.mu.Lock()
	flying, reserved := h.flying, h.reserved
	h.mu.Unlock()
	for rec, err := range h.out.Keys(ctx) {
		if err != nil {
			return err
		}
		s.Events++
		s.Bytes += keySize(rec.Key)
	}
	for rec, err := range h.dead.Keys(ctx) {
		if err != nil {
			return err
		}
		s.DeadEvents++
		s.DeadBytes += keySize(rec.Key)
	}
	h.mu.Lock()
	// Being written when the listing began, or queued since: the listing
	// may have missed them.
	s.Events += flying.n + h.reserved.n - reserved.n
	s.Bytes += flying.bytes + h.reserved.bytes - reserved.bytes
	h.size, h.recount = s, false
	h.mu.Unlock()
	h.s.counted = s.At
	h.obs.HookOutbox(int(s.Events))
	h.obs.HookDead(int(s.DeadEvents))
	h.publish(ctx)
	return nil
}

// publish records the outbox's size as the sender knows it, for the
// servers that queue without sending, when it changed.
func (h *Hooks) publish(ctx context.Context) {
	h.mu.Lock()
	s := h.size
	h.mu.Unlock()
	p := h.s.published
	if h.s.publishedAny && s.Events == p.Events && s.Bytes == p.Bytes && s.DeadEvents == p.DeadEvents && s.DeadBytes == p.DeadBytes {
		return
	}
	if err := h.sizes.Put(ctx, sizesKey, s); err != nil {
		h.log.Warn("recording the notifications' outbox's size", "err", err)
		return
	}
	h.s.published, h.s.publishedAny = s, true
}

// readSize takes the size of the outbox the sender recorded, on a
// server that queues without sending, with what it queued that the
// sender's count may not hold.
func (h *Hooks) readSize(ctx context.Context) {
	s, err := h.sizes.Get(ctx, sizesKey)
	if err != nil {
		if !errors.Is(err, largo.ErrNotFound) {
			h.log.Warn("reading the notifications' outbox's size", "err", err)
		}
		return
	}
	h.mu.Lock()
	kept := h.recent[:0]
	for _, q := range h.recent {
		if q.done.IsZero() || q.done.After(s.At) {
			kept = append(kept, q)
			s.Events++
			s.Bytes += q.n
		}
	}
	clear(h.recent[len(kept):])
	h.recent = kept
	h.size = s
	h.mu.Unlock()
	h.obs.HookOutbox(int(s.Events))
	h.obs.HookDead(int(s.DeadEvents))
}
