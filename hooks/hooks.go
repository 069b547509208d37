// Package hooks tells services of the operator's about writes: a
// pre-upload hook, asked over HTTP before an upload is accepted, that may
// refuse it (its status and message reach the client, whatever protocol
// it speaks) or give it metadata; and notifications of every file
// committed, deleted, moved or expired, kept in a durable outbox in the
// store's state area and sent from there until the receiver takes them.
// Every request is signed as Standard Webhooks signs (sign.go: the id, the
// time of the attempt and the body), so that a request captured cannot
// be replayed as new.
//
// The outbox (outbox.go) is a table of the record layer (package record)
// whose keys sort in the order the events were queued; it is bounded by a
// count and a size, past which new events are dropped and counted. One
// server at a time sends (send.go): the holder of a record.Lease, which
// sends the events it queued itself from memory, and reads the table a
// page at a time for the others' and after a restart. An event the
// receiver keeps refusing (4xx) is parked as a dead letter (dead.go) and
// the next ones flow; other failures are tried again with a backoff with
// full jitter.
//
// A Hooks implements ingest.Hooks: the write pipeline asks and tells it,
// so that every protocol is covered by one implementation. The payloads,
// the signature and the retries are described for receivers in
// docs/hooks.md.
//
// A Hooks is safe for concurrent use.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"largo"
	"largo/gate"
	"largo/ingest"
	"largo/record"
)

// Defaults of the zero values of Config.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Minute
	DefaultPoll        = 5 * time.Second
	DefaultLease       = 15 * time.Second
	DefaultMaxEvents   = 100_000
	DefaultMaxBytes    = 256 << 20
	DefaultMaxRefusals = 5
)

// Observer receives the events that hook metrics are made of.
// Implementations must be safe for concurrent use.
type Observer interface {
	// HookEvent counts a notification at a stage: queued, delivered,
	// failed (one attempt), parked (made a dead letter), dropped (not
	// queued: the outbox was full) or lost (it could not be queued, or
	// what the outbox held was no notification).
	HookEvent(stage string)
	// HookOutbox sets the count of notifications waiting in the outbox.
	HookOutbox(depth int)
	// HookDead sets the count of dead letters.
	HookDead(n int)
	// HookAdmit counts a pre-upload hook's answer: accepted, refused,
	// failed (an answer that is neither) or unavailable (no answer).
	HookAdmit(outcome string)
}

// Config configures a Hooks. The zero value of each field is its default.
type Config struct {
	// PreUpload is the URL of the pre-upload hook (http or https); ""
	// asks no one, and every upload goes ahead.
	PreUpload string
	// Notify is the URL notifications are sent to; "" sends none and
	// keeps none.
	Notify string
	// Secret signs every request (sign.go); nil leaves them unsigned.
	Secret []byte
	// Timeout bounds each call: the pre-upload hook's answer, and each
	// attempt to deliver a notification. Zero means DefaultTimeout.
	Timeout time.Duration
	// FailOpen accepts an upload when the pre-upload hook gives no
	// answer in time; by default it is refused (503).
	FailOpen bool
	// State keeps the outbox; required with Notify. Where it takes
	// conditional writes (largo.StateCreator and largo.StateSwapper),
	// one server at a time sends from it.
	State largo.State
	// MaxEvents and MaxBytes bound the outbox with its dead letters: an
	// event that would take it past either is dropped (counted and
	// logged), not queued. Zero means DefaultMaxEvents, DefaultMaxBytes.
	MaxEvents int
	MaxBytes  int64
	// MaxRefusals is how many times in a row the receiver may refuse an
	// event (a 4xx other than 408 and 429) before it is parked as a dead
	// letter, so that the next ones flow. Zero means DefaultMaxRefusals.
	MaxRefusals int
	// MaxAge parks an event still failing (a 5xx, 408 or 429) once it
	// is older than this; zero tries it again for ever (an event that
	// gets no answer at all is never parked: the receiver is down).
	MaxAge time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed delivery
	// is tried again: a random wait (full jitter) below a ceiling that
	// doubles from MinBackoff up to MaxBackoff. Zero means
	// DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often the outbox is read when nothing wakes the
	// sender (notifications queued by another server on a shared
	// bucket). Zero means DefaultPoll.
	Poll time.Duration
	// Lease is how long a sender's hold on the outbox lasts unless
	// renewed. Zero means DefaultLease.
	Lease time.Duration
	// Client sends the requests; nil means a client of its own, which
	// follows no redirect, and whose connections Close closes.
	Client *http.Client
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Hooks asks the pre-upload hook and queues and sends notifications.
// Create one with New, run Run to send, and Close once Run has returned
// (and no upload asks the pre-upload hook any more) to give up the
// outbox's lease and close the connections to the hooks.
type Hooks struct {
	cfg    Config
	log    *slog.Logger
	obs    Observer
	client *http.Client
	wake   chan struct{}
	// ownClient: client is the Hooks' own, its connections Close's to
	// close.
	ownClient bool

	recs  *record.Store
	out   *record.Table[json.RawMessage] // the events waiting: their bodies
	dead  *record.Table[deadLetter]
	sizes *record.Table[outboxSize] // the sender's count, for the others

	mu   sync.Mutex
	last int64 // the outbox key's time of the last event queued, for order
	// size is what the outbox holds as this server knows it (size.go);
	// flying what it is writing, reserved all it queued.
	size             outboxSize
	flying, reserved tally
	// dropped counts the events dropped since the outbox was last found
	// to have room (for one log line per run of drops); recount asks the
	// sender to count the outbox again.
	dropped int
	recount bool
	// recent: the events queued here while another server sends, which
	// its count may not hold yet.
	recent []*queued
	// The sender's: its lease (nil when it holds none), and the events
	// this server queued while holding it, in key order, to send without
	// reading them back; unread: an event was written that is not kept
	// there (memory was full, or the lease was taken meanwhile): the
	// outbox must be read.
	lease  *record.Lease
	mem    []*pending
	unread bool

	s sendState // Run's own
}

var _ ingest.Hooks = (*Hooks)(nil)

// New returns the Hooks of cfg, or what is wrong with it.
func New(cfg Config) (*Hooks, error) {
	for _, u := range []struct{ what, url string }{{"pre-upload hook", cfg.PreUpload}, {"notifications", cfg.Notify}} {
		if u.url == "" {
			continue
		}
		p, err := url.Parse(u.url)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("%s: %q is not an http or https URL", u.what, u.url)
		}
	}
	if cfg.Notify != "" && cfg.State == nil {
		return nil, errors.New("notifications: the store keeps no state for an outbox")
	}
	if cfg.MaxEvents < 0 || cfg.MaxBytes < 0 || cfg.MaxRefusals < 0 || cfg.MaxAge < 0 {
		return nil, errors.New("notifications: a negative bound")
	}
	defaults(&cfg)
	h := &Hooks{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, client: cfg.Client, wake: make(chan struct{}, 1)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	if h.client == nil {
		h.client = &http.Client{
			Transport:     http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		h.ownClient = true
	}
	if cfg.State != nil {
		h.recs = record.New(cfg.State, record.Options{Now: cfg.Now})
		h.out, h.dead, h.sizes = tables(h.recs)
	}
	return h, nil
}

// defaults fills in the zero values of cfg.
func defaults(cfg *Config) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxRefusals == 0 {
		cfg.MaxRefusals = DefaultMaxRefusals
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// who describes the principal ctx carries, as payloads name it.
type who struct {
	Principal string `json:"principal"`
	User      string `json:"user,omitempty"`
	Link      string `json:"link,omitempty"`
}

func principal(ctx context.Context) who {
	p, ok := gate.From(ctx)
	if !ok {
		return who{Principal: "unknown"}
	}
	return who{Principal: p.String(), User: p.UserName(), Link: p.LinkID()}
}

type nopObserver struct{}

func (nopObserver) HookEvent(string) {}
func (nopObserver) HookOutbox(int)   {}
func (nopObserver) HookDead(int)     {}
func (nopObserver) HookAdmit(string) {}
