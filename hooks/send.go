package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"largo"
	"largo/record"
)

// outboxPage is how many keys the sender lists at once.
const outboxPage = 1000

// sendState is the sender's own (Run's goroutine's, unlocked).
type sendState struct {
	// clear: the outbox was last read to its end, and since then
	// nothing failed nor was left out of memory: the events queued here
	// may be sent from memory, without reading the outbox.
	clear bool
	// othersAt is when an event this server did not queue was last
	// sent: while others queue, every pass reads the outbox, so that
	// their events and this server's leave in the order of their keys.
	othersAt time.Time
	// since is when this server took the lease: an event queued since
	// that is not in its memory is another server's.
	since time.Time
	// The event at the head that failed: its key, the attempts and the
	// refusals (4xx) it got.
	head            string
	tries, refusals int
	// When the outbox was last counted, and the size last recorded
	// for the others.
	counted      time.Time
	published    outboxSize
	publishedAny bool
}

// errNotHolder: another server holds the outbox's lease.
var errNotHolder = errors.New("another server sends the notifications")

// Run sends the outbox's notifications until ctx is done: at once when
// Notify queues one, every Config.Poll otherwise (to find the events of
// other servers sharing the store), and after a failure when its backoff
// is over (events queued meanwhile wait too). The lease it holds is given
// up by Close, once it has returned.
func (h *Hooks) Run(ctx context.Context) {
	if h.cfg.Notify == "" {
		return
	}
	poll := time.NewTicker(h.cfg.Poll)
	defer poll.Stop()
	retry := time.NewTimer(0) // the first pass reads the outbox
	defer retry.Stop()
	backingOff := true
	failures := 0
	for {
		tick := true
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			if backingOff {
				continue // the retry timer ends the backoff
			}
			tick = false
		case <-poll.C:
			if backingOff {
				continue
			}
		case <-retry.C:
		}
		err := h.pass(ctx, tick)
		backingOff = false
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNotHolder):
			failures = 0
		case err != nil:
			failures++
			d := h.backoff(failures)
			h.log.Warn("notification not delivered", "err", err, "retry in", d.Round(time.Millisecond))
			backingOff = true
			retry.Reset(d)
		default:
			failures = 0
			if h.ready() {
				h.poke() // queued during the pass
			}
		}
	}
}

// backoff is the wait before the next attempt after failures in a row:
// a random time below a ceiling that doubles from Config.MinBackoff up to
// Config.MaxBackoff (full jitter), so that servers and receivers that
// failed together do not try again together.
func (h *Hooks) backoff(failures int) time.Duration {
	ceiling := h.cfg.MinBackoff
	for i := 1; i < failures && ceiling < h.cfg.MaxBackoff; i++ {
		ceiling *= 2
	}
	return rand.N(min(ceiling, h.cfg.MaxBackoff)) + time.Millisecond
}

// pass sends what waits, in key order, if this server holds the lease
// (taken, on a tick, where no one holds it): the outbox read a page at a
// time when it must be (on a tick, after a failure, while other servers
// queue), then the events queued here from memory. It stops at the first
// event that fails and is not parked.
func (h *Hooks) pass(ctx context.Context, tick bool) error {
	if err := h.hold(ctx, tick); err != nil {
		return err
	}
	h.mu.Lock()
	if h.unread {
		h.unread, h.s.clear = false, false
	}
	h.mu.Unlock()
	if tick && h.needCount() {
		if err := h.count(ctx); err != nil {
			h.log.Warn("counting the notifications' outbox", "err", err)
		}
	}
	others := h.othersQueue()
	if tick || !h.s.clear || others {
		if err := h.readOutbox(ctx); err != nil {
			return err
		}
		if tick {
			h.publish(ctx)
		}
		if others || h.othersQueue() {
			// Not from memory: an event of another server written before
			// one of this server's was queued is found by the next
			// reading, which sends it first.
			return nil
		}
	}
	return h.sendMemory(ctx)
}

// othersQueue reports whether other servers queue events: one was found
// in the outbox within the last three polls. Then every event is sent
// from a reading of the outbox, in the order of the keys.
func (h *Hooks) othersQueue() bool {
	return !h.s.othersAt.IsZero() && h.cfg.Now().Sub(h.s.othersAt) < 3*h.cfg.Poll
}

// hold makes sure this server holds the sender's lease: kept while it
// holds it, taken on a tick where no one else does. errNotHolder when
// another server holds it.
func (h *Hooks) hold(ctx context.Context, tick bool) error {
	h.mu.Lock()
	l := h.lease
	h.mu.Unlock()
	if l != nil && l.Holding() {
		return nil
	}
	if l != nil {
		// Lost, or not renewed in time: what this server kept in memory
		// is in the outbox, for whoever sends next.
		h.mu.Lock()
		h.lease, h.mem, h.unread = nil, nil, false
		h.mu.Unlock()
		if err := l.Release(ctx); err != nil {
			h.log.Warn("outbox lease", "err", err)
		}
	}
	if !tick {
		return errNotHolder
	}
	l, err := h.recs.Acquire(ctx, leaseKey, h.cfg.Lease)
	if errors.Is(err, record.ErrHeld) {
		h.readSize(ctx)
		return errNotHolder
	}
	if err != nil {
		h.log.Warn("outbox lease", "err", err)
		return errNotHolder
	}
	l.Keep(ctx)
	h.mu.Lock()
	h.lease, h.recent = l, nil
	h.mu.Unlock()
	// Not clear: the outbox is read, and counted, first.
	h.s = sendState{since: h.cfg.Now()}
	return nil
}

// holding reports whether this server still holds the lease.
func (h *Hooks) holding() bool {
	h.mu.Lock()
	l := h.lease
	h.mu.Unlock()
	return l != nil && l.Holding()
}

// readOutbox sends the outbox's events in key order, a page of keys at a
// time: those queued here from memory, the others read. Having read it to
// its end, the events queued here since may be sent from memory.
func (h *Hooks) readOutbox(ctx context.Context) error {
	after, others := "", false
	for {
		page, err := h.out.PageKeys(ctx, after, outboxPage)
		if err != nil {
			return err
		}
		for _, rec := range page {
			after = rec.Key
			if !h.holding() {
				return errNotHolder
			}
			body, mine := h.remembered(rec.Key)
			if !mine {
				b, err := h.out.Get(ctx, rec.Key)
				switch {
				case errors.Is(err, largo.ErrNotFound):
					continue // sent by a server that held the lease before
				case errors.Is(err, record.ErrDamaged):
					b = nil // no notification: removed by send
				case err != nil:
					return err
				}
				body = b
				if at, _, _ := keyInfo(rec.Key); !at.Before(h.s.since) {
					others = true
				}
			}
			if err := h.send(ctx, rec.Key, body, mine); err != nil {
				return err
			}
		}
		if len(page) < outboxPage {
			break
		}
	}
	h.s.clear = true
	if others {
		h.s.othersAt = h.cfg.Now()
	}
	return nil
}

// remembered returns the body of key if this server keeps it in memory.
func (h *Hooks) remembered(key string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.mem {
		if p.key == key {
			return p.body, true
		}
	}
	return nil, false
}

// ready reports whether an event queued here waits in memory, written.
func (h *Hooks) ready() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mem) > 0 && h.mem[0].written
}

// sendMemory sends the events queued here, in order, from memory, while
// the outbox holds nothing before them; it stops at one whose record is
// still being written (its writer wakes the sender once it is).
func (h *Hooks) sendMemory(ctx context.Context) error {
	for h.s.clear {
		h.mu.Lock()
		var p *pending
		if len(h.mem) > 0 && h.mem[0].written {
			p = h.mem[0]
		}
		h.mu.Unlock()
		if p == nil {
			return nil
		}
		if !h.holding() {
			return errNotHolder
		}
		if err := h.send(ctx, p.key, p.body, true); err != nil {
			h.s.clear = false
			return err
		}
	}
	return nil
}

// send delivers the event keyed key, of body (queued here while this
// server sent: mine), and removes it from the outbox once delivered, or
// parks it as a dead letter when it failed for good; an error when it
// failed and waits in the outbox to be tried again.
func (h *Hooks) send(ctx context.Context, key string, body []byte, mine bool) error {
	var head struct{ ID, Type string }
	if body == nil || json.Unmarshal(body, &head) != nil || head.ID == "" {
		// No notification (nothing Notify wrote): it would hold back
		// every one after it for ever.
		h.log.Error("not a notification: removed from the outbox", "key", key)
		h.obs.HookEvent("lost")
		if err := h.out.Delete(ctx, key); err != nil {
			return err
		}
		h.sent(key, keySize(key), mine)
		return nil
	}
	if h.s.head != key {
		h.s.head, h.s.tries, h.s.refusals = key, 0, 0
	}
	h.s.tries++
	status, err := h.deliver(ctx, body, head.ID, head.Type)
	if err == nil {
		h.obs.HookEvent("delivered")
		h.s.head = ""
		// Removed even if the server is stopping: sent is sent.
		if err := h.out.Delete(context.WithoutCancel(ctx), key); err != nil {
			return err // sent again later: a duplicate, with its id
		}
		h.sent(key, int64(len(body)), mine)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	h.obs.HookEvent("failed")
	if refused(status) {
		h.s.refusals++
		if h.s.refusals >= h.cfg.MaxRefusals {
			h.s.head = ""
			return h.park(ctx, key, body, mine, status, h.s.tries, fmt.Sprintf("refused %d times: %v", h.s.refusals, err))
		}
	} else if at, _, _ := keyInfo(key); status != 0 && h.cfg.MaxAge > 0 && !at.IsZero() && h.cfg.Now().Sub(at) > h.cfg.MaxAge {
		h.s.head = ""
		return h.park(ctx, key, body, mine, status, h.s.tries, fmt.Sprintf("still failing after %s: %v", h.cfg.MaxAge, err))
	}
	return fmt.Errorf("%s: %w", key, err)
}

// refused reports whether a receiver's status refuses an event for what
// it is (a 4xx), rather than for now (408 Request Timeout, 429 Too Many
// Requests).
func refused(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// sent forgets the event keyed key, of n bytes, gone from the outbox.
func (h *Hooks) sent(key string, n int64, mine bool) {
	h.mu.Lock()
	h.forgetLocked(key)
	h.removedLocked(key, n, mine, false)
	depth := h.size.Events
	h.mu.Unlock()
	h.obs.HookOutbox(int(depth))
}

// deliver posts one notification's body; a 2xx within the timeout is
// success. It returns the receiver's status (0 for no answer).
func (h *Hooks) deliver(ctx context.Context, body []byte, id, typ string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	resp, err := h.post(ctx, h.cfg.Notify, id, body, map[string]string{EventIDHeader: id, EventTypeHeader: typ})
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// Close gives up the outbox's lease, if this server holds it, so that
// another server (or this one started again) sends without waiting for
// the lease to run out, and closes the idle connections of the Hooks'
// own client. Call it once Run has returned and no upload asks the
// pre-upload hook any more; ctx bounds it.
func (h *Hooks) Close(ctx context.Context) error {
	if h.ownClient {
		defer h.client.CloseIdleConnections()
	}
	h.mu.Lock()
	l := h.lease
	h.lease, h.mem = nil, nil
	h.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := l.Release(ctx); err != nil {
		return fmt.Errorf("outbox lease: %w", err)
	}
	return nil
}
