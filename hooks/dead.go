package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"largo"
	"largo/record"
)

// deadLetter is an event the receiver kept refusing, parked out of the
// outbox under its outbox key, so that the next ones flow: the body as
// it was to be sent, and why it was parked.
type deadLetter struct {
	Body   json.RawMessage `json:"body"`
	Parked time.Time       `json:"parked"`
	Status int             `json:"status,omitempty"` // the last answer's, 0 for none
	Reason string          `json:"reason"`
	Tries  int             `json:"tries"`
}

// park moves the event keyed key, of body, from the outbox to the dead
// letters: written there first, so that a failure in between leaves it in
// both (sent again if it is retried), never in neither.
func (h *Hooks) park(ctx context.Context, key string, body []byte, mine bool, status, tries int, reason string) error {
	ctx = context.WithoutCancel(ctx) // parked is parked, even at a stop
	d := deadLetter{Body: body, Parked: h.cfg.Now().UTC(), Status: status, Reason: reason, Tries: tries}
	if err := h.dead.Put(ctx, key, d); err != nil {
		return err
	}
	if err := h.out.Delete(ctx, key); err != nil {
		return err
	}
	n := int64(len(body))
	h.mu.Lock()
	h.forgetLocked(key)
	h.removedLocked(key, n, mine, true)
	depth, dead := h.size.Events, h.size.DeadEvents
	h.mu.Unlock()
	_, id, _ := keyInfo(key)
	h.log.Warn("notification parked as a dead letter: the next ones are sent; see largo hooks dead",
		"id", id, "status", status, "tries", tries, "reason", reason)
	h.obs.HookEvent("parked")
	h.obs.HookOutbox(int(depth))
	h.obs.HookDead(int(dead))
	return nil
}

// DeadLetters are the notifications a store's outbox parked: what
// `largo hooks dead`, `retry` and `drop` show and change, beside the
// servers or without them. It is safe for concurrent use.
type DeadLetters struct {
	out  *record.Table[json.RawMessage]
	dead *record.Table[deadLetter]
}

// NewDeadLetters returns the dead letters of the outbox in st.
func NewDeadLetters(st largo.State) *DeadLetters {
	out, dead, _ := tables(record.New(st, record.Options{}))
	return &DeadLetters{out: out, dead: dead}
}

// DeadLetter is a notification parked: the receiver refused it
// Config.MaxRefusals times, or it failed past Config.MaxAge.
type DeadLetter struct {
	// ID, Type, Name and Time are the event's (its id, as receivers
	// see it, names it to Retry and Drop).
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Name string    `json:"name"`
	Time time.Time `json:"time"`
	// Parked is when it was parked; Status the receiver's last answer
	// (0 for none), Reason what was wrong, Tries the attempts made.
	Parked time.Time `json:"parked"`
	Status int       `json:"status,omitempty"`
	Reason string    `json:"reason"`
	Tries  int       `json:"tries"`
	// Body is the notification as it is sent.
	Body json.RawMessage `json:"body"`
}

// deadPage is how many dead letters a look reads at once.
const deadPage = 256

// Each calls f with every dead letter, oldest event first, a page at a
// time, until f returns false; a damaged record is yielded as an error
// that does not end the walk.
func (d *DeadLetters) Each(ctx context.Context, f func(DeadLetter, error) bool) error {
	after := ""
	for {
		page, err := d.dead.Page(ctx, after, deadPage)
		if err != nil && len(page) == 0 {
			return err
		}
		for _, e := range page {
			after = e.Key
			dl, derr := letter(e)
			if derr == nil && e.Value.Body == nil {
				derr = fmt.Errorf("dead letter %s: damaged", e.Key)
			}
			if !f(dl, derr) {
				return nil
			}
		}
		if len(page) < deadPage {
			return nil
		}
	}
}

// letter describes the dead letter e.
func letter(e record.Entry[deadLetter]) (DeadLetter, error) {
	at, id, _ := keyInfo(e.Key)
	dl := DeadLetter{ID: id, Time: at.UTC(), Parked: e.Value.Parked, Status: e.Value.Status, Reason: e.Value.Reason, Tries: e.Value.Tries, Body: e.Value.Body}
	var head struct{ ID, Type, Name string }
	if err := json.Unmarshal(e.Value.Body, &head); err != nil {
		return dl, fmt.Errorf("dead letter %s: %v", e.Key, err)
	}
	dl.Type, dl.Name = head.Type, head.Name
	return dl, nil
}

// ErrNoDeadLetter is an id no dead letter has.
var ErrNoDeadLetter = errors.New("no dead letter has this id")

// Retry moves the dead letters of ids (all of them with all) back into
// the outbox under their keys, so that each is sent next, before the
// events queued after it, by the server that sends; it returns how many
// it moved. An id that no dead letter has is an error wrapping
// ErrNoDeadLetter, after the others were moved.
func (d *DeadLetters) Retry(ctx context.Context, ids []string, all bool) (int, error) {
	return d.each(ctx, ids, all, func(key string, v deadLetter) error {
		if err := d.out.Put(ctx, key, v.Body); err != nil {
			return err
		}
		return d.dead.Delete(ctx, key)
	})
}

// Drop removes the dead letters of ids (all of them with all) for good,
// and returns how many it removed; an unknown id is as for Retry.
func (d *DeadLetters) Drop(ctx context.Context, ids []string, all bool) (int, error) {
	return d.each(ctx, ids, all, func(key string, _ deadLetter) error {
		return d.dead.Delete(ctx, key)
	})
}

// each calls f with the key and record of each dead letter of ids, or of
// every one with all, a page at a time.
func (d *DeadLetters) each(ctx context.Context, ids []string, all bool, f func(string, deadLetter) error) (int, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	n, after := 0, ""
	for {
		page, err := d.dead.PageKeys(ctx, after, deadPage)
		if err != nil {
			return n, err
		}
		for _, rec := range page {
			after = rec.Key
			_, id, _ := keyInfo(rec.Key)
			if !all && !want[id] {
				continue
			}
			delete(want, id)
			v, err := d.dead.Get(ctx, rec.Key)
			if errors.Is(err, largo.ErrNotFound) {
				continue // retried or dropped meanwhile
			}
			if err == nil {
				err = f(rec.Key, v)
			}
			if err != nil {
				return n, err
			}
			n++
		}
		if len(page) < deadPage {
			break
		}
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return n, fmt.Errorf("%s: %w", strings.Join(missing, ", "), ErrNoDeadLetter)
	}
	return n, nil
}
