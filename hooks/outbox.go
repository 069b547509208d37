package hooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"largo"
	"largo/ingest"
)

// The outbox is a folder of records in the store's state area, one per
// notification, each holding the exact body to send. A record is written
// (durably: the state area's records are fsynced on a folder, PUT on a
// bucket) before Notify returns, which is before the client that made the
// change is answered, and removed only after the receiver answered a
// 2xx. Keys sort in the order the events were queued, and one sender
// (the holder of the outbox's lease, when several servers share a
// bucket) sends them in that order, each until it is taken: a receiver
// that is down holds back the ones after it, never drops them.
const (
	outboxPrefix = "hooks/outbox/"
	leaseKey     = "hooks/sender"
)

// The fields of a notification's request besides its body.
const (
	EventIDHeader   = "Largo-Event-Id"
	EventTypeHeader = "Largo-Event-Type"
)

// event is a notification's body.
type event struct {
	ID       string            `json:"id"`
	Type     string            `json:"type"`
	Time     time.Time         `json:"time"`
	Name     string            `json:"name"`
	From     string            `json:"from,omitempty"`
	Folder   bool              `json:"folder,omitempty"`
	Size     int64             `json:"size"`
	ETag     string            `json:"etag,omitempty"`
	Modified *time.Time        `json:"modified,omitempty"`
	SHA256   string            `json:"sha256,omitempty"`
	Protocol string            `json:"protocol,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	who
}

// Notify implements ingest.Hooks: it writes e to the outbox, and wakes
// the sender.
func (h *Hooks) Notify(ctx context.Context, e ingest.Event) {
	if h.cfg.Notify == "" {
		return
	}
	now := h.cfg.Now().UTC()
	ev := event{
		ID: newID(), Type: e.Type, Time: now, Name: e.Name, From: e.From,
		Folder: e.Info.IsDir, ETag: e.Info.ETag,
		Protocol: e.Protocol, Metadata: e.Metadata, who: principal(ctx),
	}
	if !e.Info.IsDir {
		ev.Size = e.Info.Size
	}
	if !e.Info.ModTime.IsZero() {
		m := e.Info.ModTime.UTC()
		ev.Modified = &m
	}
	if e.SHA256 != nil {
		ev.SHA256 = hex.EncodeToString(e.SHA256)
	}
	body, err := json.Marshal(ev)
	if err == nil {
		err = h.cfg.State.Put(ctx, h.key(now, ev.ID), body)
	}
	if err != nil {
		h.obs.HookEvent("lost")
		h.log.Error("notification not queued", "type", e.Type, "name", e.Name, "err", err)
		return
	}
	h.obs.HookEvent("queued")
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// key returns the outbox key of an event queued at now: its time in
// nanoseconds, hex, strictly after the last one queued here, so that the
// keys of one server sort in the order of its events.
func (h *Hooks) key(now time.Time, id string) string {
	h.mu.Lock()
	t := max(now.UnixNano(), h.last+1)
	h.last = t
	h.mu.Unlock()
	return fmt.Sprintf("%s%016x-%s", outboxPrefix, t, id)
}

// newID returns a random identifier: 128 bits, hex.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run sends the outbox's notifications until ctx is done: at once when
// Notify queues one, every Config.Poll otherwise, and after a failure
// when its backoff is over (a notification queued meanwhile waits too).
// The lease it holds is given up by Close, once it has returned.
func (h *Hooks) Run(ctx context.Context) {
	if h.cfg.Notify == "" {
		return
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var retryAt time.Time
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			if h.cfg.Now().Before(retryAt) {
				continue // the timer ends the backoff
			}
			timer.Stop()
		case <-timer.C:
		}
		err := h.pass(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNotHolder):
			backoff, retryAt = 0, time.Time{}
			timer.Reset(h.cfg.Poll)
		case err != nil:
			backoff = min(max(2*backoff, h.cfg.MinBackoff), h.cfg.MaxBackoff)
			retryAt = h.cfg.Now().Add(backoff)
			h.log.Warn("notification not delivered", "err", err, "retry in", backoff)
			timer.Reset(backoff)
		default:
			backoff, retryAt = 0, time.Time{}
			timer.Reset(h.cfg.Poll)
		}
	}
}

// errNotHolder: another server holds the outbox's lease.
var errNotHolder = errors.New("another server sends the notifications")

// pass sends what the outbox holds, in order, and stops at the first
// notification that fails.
func (h *Hooks) pass(ctx context.Context) error {
	if !h.hold(ctx) {
		return errNotHolder
	}
	var keys []string
	for r, err := range h.cfg.State.List(ctx, outboxPrefix) {
		if err != nil {
			return err
		}
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	for i, key := range keys {
		h.obs.HookOutbox(len(keys) - i)
		if !h.hold(ctx) {
			return errNotHolder
		}
		body, err := h.cfg.State.Get(ctx, key)
		if errors.Is(err, largo.ErrNotFound) {
			continue // sent by a server that held the lease before
		}
		if err != nil {
			return err
		}
		var head struct{ ID, Type string }
		if json.Unmarshal(body, &head) != nil || head.ID == "" {
			// No notification (nothing Notify wrote): it would hold back
			// every one after it for ever.
			h.log.Error("not a notification: removed from the outbox", "key", key)
			h.obs.HookEvent("lost")
			if err := h.cfg.State.Delete(ctx, key); err != nil {
				return err
			}
			continue
		}
		if err := h.deliver(ctx, body, head.ID, head.Type); err != nil {
			h.obs.HookEvent("failed")
			return fmt.Errorf("%s: %w", key, err)
		}
		h.obs.HookEvent("delivered")
		// Removed even if the server is stopping: sent is sent.
		if err := h.cfg.State.Delete(context.WithoutCancel(ctx), key); err != nil {
			return err // sent again later: a duplicate, with its id
		}
	}
	h.obs.HookOutbox(0)
	return nil
}

// deliver posts one notification's body; a 2xx within the timeout is
// success.
func (h *Hooks) deliver(ctx context.Context, body []byte, id, typ string) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	resp, err := h.post(ctx, h.cfg.Notify, body, map[string]string{EventIDHeader: id, EventTypeHeader: typ})
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// lease is the record of the outbox's sender.
type lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// hold takes or renews the outbox's lease, and reports whether this
// server holds it; a state without leases (no largo.StateCreator and
// largo.StateSwapper) is held by every server. The lease is renewed
// when half of it is over.
func (h *Hooks) hold(ctx context.Context) bool {
	cr, ok1 := h.cfg.State.(largo.StateCreator)
	sw, ok2 := h.cfg.State.(largo.StateSwapper)
	if !ok1 || !ok2 {
		return true
	}
	now := h.cfg.Now()
	h.mu.Lock()
	fresh := h.leaseUntil.Sub(now) > h.cfg.Lease/2
	h.mu.Unlock()
	if fresh {
		return true
	}
	mine, _ := json.Marshal(lease{Holder: h.holder, Until: now.Add(h.cfg.Lease)})
	b, ver, err := sw.GetVersion(ctx, leaseKey)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		err = cr.Create(ctx, leaseKey, mine)
	case err == nil:
		var l lease
		if json.Unmarshal(b, &l) == nil && l.Holder != h.holder && now.Before(l.Until) {
			return false
		}
		_, err = sw.Swap(ctx, leaseKey, mine, ver)
	}
	if err != nil {
		if !errors.Is(err, largo.ErrExist) && !errors.Is(err, largo.ErrPrecondition) {
			h.log.Warn("outbox lease", "err", err)
		}
		return false
	}
	h.mu.Lock()
	h.leaseUntil = now.Add(h.cfg.Lease)
	h.mu.Unlock()
	return true
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
	if h.cfg.Notify == "" {
		return nil
	}
	return h.release(ctx)
}

// release gives the lease up, if this server holds it.
func (h *Hooks) release(ctx context.Context) error {
	sw, ok := h.cfg.State.(largo.StateSwapper)
	if !ok {
		return nil
	}
	b, ver, err := sw.GetVersion(ctx, leaseKey)
	switch {
	case errors.Is(err, largo.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("outbox lease: %w", err)
	}
	var l lease
	if json.Unmarshal(b, &l) != nil || l.Holder != h.holder {
		return nil
	}
	h.mu.Lock()
	h.leaseUntil = time.Time{}
	h.mu.Unlock()
	if err := sw.DeleteIf(ctx, leaseKey, ver); err != nil && !errors.Is(err, largo.ErrPrecondition) && !errors.Is(err, largo.ErrNotFound) {
		return fmt.Errorf("outbox lease: %w", err)
	}
	return nil
}
