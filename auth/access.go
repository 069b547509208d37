package auth

import (
	"crypto/sha256"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Access answers, for each request, who sends it and what they may do,
// under a Policy that can be replaced while the server runs (a reload on
// SIGHUP: requests in flight keep the policy they started with).
// Verified passwords are cached for a minute, in memory, keyed by a hash
// of the credential, so a sign-in costs one password hash per minute, not
// one per request. Failed credentials are rate-limited per client
// address. An Access is safe for concurrent use.
type Access struct {
	policy atomic.Pointer[Policy]
	now    func() time.Time

	mu    sync.RWMutex
	cache map[[32]byte]cached

	failMu   sync.Mutex
	failures map[string]*rate.Limiter
	failing  atomic.Int32 // len(failures), read without the lock
}

type cached struct {
	user  string
	until time.Time
}

// Cache and rate-limit bounds.
const (
	cacheTTL     = time.Minute
	cacheMax     = 4096
	failBurst    = 10          // failed credentials a client may send at once
	failEvery    = time.Second // then one more per second
	failClients  = 10000       // client addresses remembered
	maxCredBytes = 4096        // a longer Authorization is refused unread
)

// New returns an Access under p. now is the clock; nil means time.Now.
func New(p *Policy, now func() time.Time) *Access {
	if now == nil {
		now = time.Now
	}
	a := &Access{now: now, cache: map[[32]byte]cached{}, failures: map[string]*rate.Limiter{}}
	a.policy.Store(p)
	return a
}

// Policy returns the policy in force.
func (a *Access) Policy() *Policy { return a.policy.Load() }

// Reload puts p in force for the requests that start from now on, and
// forgets the cached sign-ins (a removed user or a changed password must
// not outlive the reload).
func (a *Access) Reload(p *Policy) {
	a.policy.Store(p)
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}

// Errors of identification.
var (
	// ErrBadCredential: a credential that matches no user (401).
	ErrBadCredential = errors.New("invalid credentials")
	// ErrTooManyFailures: the client sent too many bad credentials (429).
	ErrTooManyFailures = errors.New("too many failed sign-ins: wait a second")
)

// Identify returns the user a request's credential names: "" for none
// (anonymous), ErrBadCredential for a credential that matches nobody,
// ErrTooManyFailures when the client's address has failed too often. A
// bearer token, or the password of basic auth under a name that is no
// user's or a user's without a password, is a token; a user's name and
// password sign in with the user's password. Under a policy without
// users every request is anonymous, whatever it carries. Only the header
// is read.
func (a *Access) Identify(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" || len(a.Policy().users) == 0 {
		return "", nil // nobody to sign in as: every request is anonymous
	}
	client := clientAddr(r)
	if a.blocked(client) {
		return "", ErrTooManyFailures
	}
	user, err := a.identify(r, h)
	if errors.Is(err, ErrBadCredential) {
		a.failed(client)
	}
	return user, err
}

func (a *Access) identify(r *http.Request, h string) (string, error) {
	p := a.Policy()
	if len(h) > maxCredBytes {
		return "", ErrBadCredential
	}
	if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return p.token(strings.TrimSpace(rest))
	}
	name, pass, ok := r.BasicAuth()
	if !ok || pass == "" {
		return "", ErrBadCredential
	}
	u, known := p.users[name]
	if !known || u.password == nil {
		// A token as the password: with no user name, any name that is
		// no user's (what curl -u :TOKEN and tools that insist on a name
		// send), or its own user's.
		user, err := p.token(pass)
		if err != nil || known && user != name {
			return "", ErrBadCredential
		}
		return user, nil
	}
	key := credentialKey(name, pass)
	now := a.now()
	a.mu.RLock()
	c, hit := a.cache[key]
	a.mu.RUnlock()
	if hit && now.Before(c.until) && c.user == name {
		return name, nil
	}
	if !u.password.matches(pass) {
		return "", ErrBadCredential
	}
	a.mu.Lock()
	if len(a.cache) >= cacheMax {
		for k, c := range a.cache {
			if !now.Before(c.until) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= cacheMax {
			clear(a.cache)
		}
	}
	a.cache[key] = cached{user: name, until: now.Add(cacheTTL)}
	a.mu.Unlock()
	return name, nil
}

// credentialKey is the cache key of a sign-in: the SHA-256 of the name
// and the password, made without a copy on the heap for the usual sizes.
func credentialKey(name, pass string) [32]byte {
	var buf [256]byte
	if len(name)+1+len(pass) > len(buf) {
		return sha256.Sum256([]byte(name + "\x00" + pass))
	}
	n := copy(buf[:], name)
	buf[n] = 0
	n += 1 + copy(buf[n+1:], pass)
	return sha256.Sum256(buf[:n])
}

// token returns the user of a token. The lookup is by the token's
// SHA-256, so its time says nothing of how close a guess was.
func (p *Policy) token(t string) (string, error) {
	if t == "" {
		return "", ErrBadCredential
	}
	user, ok := p.tokens[sha256.Sum256([]byte(t))]
	if !ok {
		return "", ErrBadCredential
	}
	return user, nil
}

// blocked reports whether client has no failures left. With no failure
// on record, as on most servers most of the time, it takes no lock.
func (a *Access) blocked(client string) bool {
	if a.failing.Load() == 0 {
		return false
	}
	a.failMu.Lock()
	defer a.failMu.Unlock()
	l := a.failures[client]
	if l == nil {
		return false
	}
	tokens := l.TokensAt(a.now())
	if tokens >= failBurst {
		// All its tries are back: forget the client.
		delete(a.failures, client)
		a.failing.Store(int32(len(a.failures)))
	}
	return tokens < 1
}

// failed counts a failed credential of client.
func (a *Access) failed(client string) {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	now := a.now()
	l := a.failures[client]
	if l == nil {
		if len(a.failures) >= failClients {
			// Forget the clients that have all their tries back.
			for c, l := range a.failures {
				if l.TokensAt(now) >= failBurst {
					delete(a.failures, c)
				}
			}
		}
		if len(a.failures) >= failClients {
			clear(a.failures)
		}
		l = rate.NewLimiter(rate.Every(failEvery), failBurst)
		a.failures[client] = l
	}
	a.failing.Store(int32(len(a.failures)))
	l.AllowN(now, 1)
}

// RetryAfter is the Retry-After of a 429 for too many failures, in
// seconds: when the client has one try back.
const RetryAfter = "1"

// clientAddr is the address failures are counted by: the client's IP.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
