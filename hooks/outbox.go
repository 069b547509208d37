package hooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"largo/ingest"
	"largo/record"
)

// The outbox is a table of records in the store's state area, one per
// notification, each holding the exact body to send. A record is written
// (durably: the state area's records are fsynced on a folder, PUT on a
// bucket) before Notify returns, which is before the client that made the
// change is answered, and removed only after the receiver answered a
// 2xx, or moved to the dead letters. Keys sort in the order the events
// were queued: the time (nanoseconds, hex), the event's id, and the
// body's length (hex), which lets a listing of keys tell the outbox's
// size without reading a record.
const (
	outboxPrefix = "hooks/outbox/"
	deadPrefix   = "hooks/dead/"
	leaseKey     = "hooks/sender"
	sizesKey     = "size" // under "hooks/"
)

// The fields of a notification's request besides its body and signature.
const (
	EventIDHeader   = "Largo-Event-Id"
	EventTypeHeader = "Largo-Event-Type"
)

// memMax bounds the events the sender keeps in memory to send without
// reading them back; past it they are read from the outbox.
const memMax = 1024

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

// pending is an event this server queued while it held the sender's
// lease: the sender sends it from here once its record is written.
type pending struct {
	key     string
	body    []byte
	written bool // its record is in the outbox
}

// tables returns the hooks' tables in recs: the outbox, the dead letters
// and the sender's count.
func tables(recs *record.Store) (*record.Table[json.RawMessage], *record.Table[deadLetter], *record.Table[outboxSize]) {
	return record.NewTable[json.RawMessage](recs, outboxPrefix, record.TableOptions{}),
		record.NewTable[deadLetter](recs, deadPrefix, record.TableOptions{}),
		record.NewTable[outboxSize](recs, "hooks/", record.TableOptions{})
}

// Notify implements ingest.Hooks: it writes e to the outbox, and wakes
// the sender; when the outbox is full it drops e, counted and logged.
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
	if err != nil {
		h.obs.HookEvent("lost")
		h.log.Error("notification not queued", "type", e.Type, "name", e.Name, "err", err)
		return
	}
	key, p, q, ok := h.reserve(now, ev.ID, body)
	if !ok {
		h.obs.HookEvent("dropped")
		return
	}
	err = h.out.Put(ctx, key, body)
	h.written(key, p, q, int64(len(body)), err == nil)
	if err != nil {
		h.obs.HookEvent("lost")
		h.log.Error("notification not queued", "type", e.Type, "name", e.Name, "err", err)
		h.poke() // the events queued after it need not wait for it
		return
	}
	h.obs.HookEvent("queued")
	h.obs.HookOutbox(h.depth())
	h.poke()
}

// reserve admits an event of body, queued at now, within the outbox's
// bounds, and returns its key, the place it holds in the sender's memory
// (nil: none) and in the count of what this server queued while another
// sends (nil: none); false when the outbox is full.
func (h *Hooks) reserve(now time.Time, id string, body []byte) (string, *pending, *queued, bool) {
	n := int64(len(body))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fullLocked(n) {
		return "", nil, nil, false
	}
	t := max(now.UnixNano(), h.last+1)
	h.last = t
	key := fmt.Sprintf("%016x-%s-%x", t, id, n)
	var p *pending
	var q *queued
	switch {
	case h.lease == nil:
		// Another server sends (or none yet). Whether the lease still
		// holds is the sender's to find (Lease.Holding waits for a
		// renewal in flight): one that lost it forgets its memory.
		q = &queued{at: time.Unix(0, t), n: n}
	case len(h.mem) >= memMax:
	default:
		p = &pending{key: key, body: body}
		h.mem = append(h.mem, p)
	}
	h.addLocked(n, q)
	return key, p, q, true
}

// written notes that the record of an event reserve admitted was
// written, or not (ok false: it was not queued).
func (h *Hooks) written(key string, p *pending, q *queued, n int64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.landedLocked(q, n, ok)
	switch {
	case ok && p != nil:
		p.written = true
	case ok && h.lease != nil:
		h.unread = true
	case !ok && p != nil:
		h.forgetLocked(key)
	}
}

// forgetLocked removes key from the sender's memory.
func (h *Hooks) forgetLocked(key string) {
	for i, p := range h.mem {
		if p.key == key {
			h.mem = append(h.mem[:i], h.mem[i+1:]...)
			return
		}
	}
}

// poke wakes the sender.
func (h *Hooks) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// keyInfo reads an outbox key: the time it was queued, the event's id,
// and its body's length (-1 for a key without it, as an earlier release
// wrote them).
func keyInfo(key string) (time.Time, string, int64) {
	parts := strings.Split(key, "-")
	if len(parts) < 2 {
		return time.Time{}, "", -1
	}
	var at time.Time
	if ns, err := strconv.ParseInt(parts[0], 16, 64); err == nil {
		at = time.Unix(0, ns)
	}
	size := int64(-1)
	if len(parts) == 3 {
		if n, err := strconv.ParseInt(parts[2], 16, 64); err == nil {
			size = n
		}
	}
	return at, parts[1], size
}

// guessSize stands for the length of a body its key does not give.
const guessSize = 1 << 10

// keySize is the length of the body keyed key, as its key tells.
func keySize(key string) int64 {
	if _, _, n := keyInfo(key); n >= 0 {
		return n
	}
	return guessSize
}

// newID returns a random identifier: 128 bits, hex.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
