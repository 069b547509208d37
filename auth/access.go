package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
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

	// hashing holds a slot per password hash being checked: each takes
	// tens of milliseconds and, for argon2id, tens of MiB.
	hashing chan struct{}

	// members are the groups a trusted proxy named for its users, which
	// the policy in force judges by.
	members memberships
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
	// hashWait is how long a sign-in waits for a hashing slot before it
	// is answered ErrBusy.
	hashWait = time.Second
)

// New returns an Access under p. now is the clock; nil means time.Now.
func New(p *Policy, now func() time.Time) *Access {
	if now == nil {
		now = time.Now
	}
	a := &Access{now: now, cache: map[[32]byte]cached{}, failures: map[string]*rate.Limiter{},
		hashing: make(chan struct{}, max(1, runtime.NumCPU()))}
	a.policy.Store(a.adopt(p))
	return a
}

// adopt returns the policy a judges by: p, with the groups a trusted
// proxy named for its users.
func (a *Access) adopt(p *Policy) *Policy {
	q := *p
	q.proxied = &a.members
	return &q
}

// Now returns the time on the Access's clock.
func (a *Access) Now() time.Time { return a.now() }

// Policy returns the policy in force.
func (a *Access) Policy() *Policy { return a.policy.Load() }

// Reload puts p in force for the requests that start from now on, and
// forgets the cached sign-ins (a removed user or a changed password must
// not outlive the reload).
func (a *Access) Reload(p *Policy) {
	a.policy.Store(a.adopt(p))
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
	// ErrBusy: every slot for checking a password was taken for longer
	// than a sign-in waits (503).
	ErrBusy = errors.New("busy checking passwords")
	// ErrNotAUser: a trusted proxy signed in a name that is no user of
	// the policy (403: signing in again changes nothing).
	ErrNotAUser = errors.New("the proxy in front signed in a user this server does not know")
)

// Identify returns the user a request's credential names: "" for none
// (anonymous), ErrBadCredential for a credential that matches nobody,
// ErrTooManyFailures when the client's address has failed too often. A
// bearer token, or the password of basic auth under a name that is no
// user's or a user's without a password, is a token; a user's name and
// password sign in with the user's password. Under a policy without
// users every request is anonymous, whatever it carries. Only the header
// is read.
//
// A request that a trusted proxy names a user for (Proxies.Resolve) is
// that user's, signed in by the proxy, with no password: its
// Authorization is not read at all (identity proxies pass their own
// credentials on in it). The name must be a user's of the policy
// (Policy.Knows), else ErrNotAUser; the groups the proxy names become the
// user's (see memberships).
func (a *Access) Identify(r *http.Request) (string, error) {
	if v := viaOf(r); v != nil && v.user != "" {
		return a.proxied(v)
	}
	h := r.Header.Get("Authorization")
	if h == "" || len(a.Policy().users) == 0 {
		return "", nil // nobody to sign in as: every request is anonymous
	}
	client := clientAddr(r)
	if a.blocked(client) {
		return "", ErrTooManyFailures
	}
	user, err := a.identify(r, h, client)
	if errors.Is(err, ErrBadCredential) && !errors.Is(err, errFailedCharged) {
		a.failed(client)
	}
	return user, err
}

// proxied returns the user a trusted proxy signed in.
func (a *Access) proxied(v *via) (string, error) {
	if !validUser(v.user) || !a.Policy().Knows(v.user) {
		return "", ErrNotAUser
	}
	if v.grouped {
		a.members.set(v.user, v.groups)
	}
	return v.user, nil
}

// Attempt refuses, with ErrTooManyFailures, a client that has no failed
// credentials left: a caller that checks a secret of its own (a share
// link's password) asks it first, and tells Failed of a wrong one.
func (a *Access) Attempt(r *http.Request) error {
	if a.blocked(clientAddr(r)) {
		return ErrTooManyFailures
	}
	return nil
}

// Failed counts a wrong secret r's client sent against its budget of
// failures.
func (a *Access) Failed(r *http.Request) { a.failed(clientAddr(r)) }

func (a *Access) identify(r *http.Request, h, client string) (string, error) {
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
	ok, err := a.checkPassword(r, client, u.password, pass)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errFailedCharged
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

// errFailedCharged is a wrong password whose failure was counted before
// its hash was checked: ErrBadCredential, not to be counted twice.
var errFailedCharged = fmt.Errorf("%w (counted)", ErrBadCredential)

// checkPassword checks pass against a hash under the two bounds that keep
// a flood of sign-ins from taking the server's memory and cores: the
// client's failure budget is charged before the hash is computed (and
// given back when the password was right), so that a client with no
// failures left costs no hash at all; and at most one hash per core runs
// at once, the others waiting up to hashWait for a slot and then being
// refused with ErrBusy.
func (a *Access) checkPassword(r *http.Request, client string, h *hash, pass string) (bool, error) {
	res := a.charge(client)
	if res == nil {
		return false, ErrTooManyFailures
	}
	t := time.NewTimer(hashWait)
	defer t.Stop()
	select {
	case a.hashing <- struct{}{}:
	case <-t.C:
		res.CancelAt(a.now())
		return false, ErrBusy
	case <-r.Context().Done():
		res.CancelAt(a.now())
		return false, r.Context().Err()
	}
	ok := h.matches(pass)
	<-a.hashing
	if ok {
		res.CancelAt(a.now())
	}
	return ok, nil
}

// charge takes one failure from client's budget ahead of a password's
// check, or returns nil when none is left.
func (a *Access) charge(client string) *rate.Reservation {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	now := a.now()
	l := a.limiter(client, now)
	res := l.ReserveN(now, 1)
	if !res.OK() || res.DelayFrom(now) > 0 {
		res.CancelAt(now)
		return nil
	}
	return res
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
	a.limiter(client, now).AllowN(now, 1)
}

// limiter returns client's budget of failures, made if it has none;
// a.failMu is held.
func (a *Access) limiter(client string, now time.Time) *rate.Limiter {
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
	return l
}

// RetryAfter is the Retry-After of a 429 for too many failures, in
// seconds: when the client has one try back.
const RetryAfter = "1"

// clientAddr is the address failures are counted by: the client's IP
// (behind a trusted proxy, the one the proxy names: see Proxies).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
