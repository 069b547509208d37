// Package hooks tells services of the operator's about writes: a
// pre-upload hook, asked over HTTP before an upload is accepted, that may
// refuse it (its status and message reach the client, whatever protocol
// it speaks) or give it metadata; and notifications of every file
// committed, deleted, moved or expired, kept in a durable outbox in the
// store's state area and sent from there, signed with HMAC-SHA256, until
// the receiver takes them (outbox.go).
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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"largo"
	"largo/gate"
	"largo/ingest"
)

// Defaults of the zero values of Config.
const (
	DefaultTimeout    = 5 * time.Second
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
	DefaultPoll       = 5 * time.Second
	DefaultLease      = 15 * time.Second
)

// SignatureHeader is the field that carries the HMAC-SHA256 of a request's
// body (Sign), on notifications and on the pre-upload hook's requests.
const SignatureHeader = "Largo-Signature"

// Observer receives the events that hook metrics are made of.
// Implementations must be safe for concurrent use.
type Observer interface {
	// HookEvent counts a notification at a stage: queued, delivered,
	// failed (one attempt) or lost (it could not be queued).
	HookEvent(stage string)
	// HookOutbox sets the count of notifications waiting in the outbox.
	HookOutbox(depth int)
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
	// Secret signs every request (SignatureHeader); nil leaves them
	// unsigned.
	Secret []byte
	// Timeout bounds each call: the pre-upload hook's answer, and each
	// attempt to deliver a notification. Zero means DefaultTimeout.
	Timeout time.Duration
	// FailOpen accepts an upload when the pre-upload hook gives no
	// answer in time; by default it is refused (503).
	FailOpen bool
	// State keeps the outbox; required with Notify. Where it offers
	// leases (largo.StateCreator and largo.StateSwapper), one server at a
	// time sends from it.
	State largo.State
	// MinBackoff and MaxBackoff bound the wait before a failed delivery
	// is tried again: it doubles from MinBackoff up to MaxBackoff. Zero
	// means DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often the outbox is looked at when nothing wakes the
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
	holder string // this sender's name in the outbox's lease
	// ownClient: client is the Hooks' own, its connections Close's to
	// close.
	ownClient bool

	mu         sync.Mutex
	last       int64     // the outbox key's time of the last event queued, for order
	leaseUntil time.Time // when this server's hold on the outbox ends
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Hooks{cfg: cfg, log: cfg.Logger, obs: cfg.Observer, client: cfg.Client, wake: make(chan struct{}, 1), holder: newID()}
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
	return h, nil
}

// Sign returns the value of SignatureHeader for body: "sha256=" and the
// hex of its HMAC-SHA256 under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig, a SignatureHeader's value, is body's under
// secret, in constant time.
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(strings.TrimSpace(sig)))
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
func (nopObserver) HookAdmit(string) {}
