package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"largo"
	"largo/internal/lru"
)

// Access answers, for each request, who sends it and what they may do,
// under a Policy that can be replaced while the server runs (a reload on
// SIGHUP: requests in flight keep the policy they started with).
// Verified passwords are cached for a minute, in memory, keyed by a hash
// of the credential, so a sign-in costs one password hash per minute, not
// one per request; past cacheMax sign-ins, the least recently used is
// forgotten (internal/lru). Failed credentials are rate-limited per client (an
// IPv6 /64 counts as one), per user name tried and per share link
// (failures.go). An Access is safe for concurrent use.
type Access struct {
	policy atomic.Pointer[Policy]
	now    func() time.Time

	cache *lru.Cache[[32]byte, cached]

	failMu  sync.Mutex
	clients failTable    // by client: largo.ClientOf
	users   failTable    // by the name of the user a password was tried for
	links   failTable    // by the ID of the share link a password was tried for
	failing atomic.Int32 // the records of the three, read without the lock

	// hashing holds a slot per password hash being checked: each takes
	// tens of milliseconds and, for argon2id, tens of MiB.
	hashing chan struct{}

	// members are the groups a trusted proxy named for its users, which
	// the policy in force judges by.
	members *memberships
}

type cached struct {
	user  string
	until time.Time
}

// Cache and rate-limit bounds.
const (
	cacheTTL     = time.Minute
	cacheMax     = 4096
	failBurst    = 10          // failed secrets a client, user or link may take at once
	failEvery    = time.Second // then one more per second
	failKeys     = 1 << 14     // the records each table of failures keeps
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
	a := &Access{now: now, cache: lru.New[[32]byte, cached](cacheMax), members: newMemberships(),
		clients: newFailTable(failKeys), users: newFailTable(failKeys), links: newFailTable(failKeys),
		hashing: make(chan struct{}, max(1, runtime.NumCPU()))}
	a.policy.Store(a.adopt(p))
	return a
}

// adopt returns the policy a judges by: p, with the groups a trusted
// proxy named for its users.
func (a *Access) adopt(p *Policy) *Policy {
	q := *p
	q.proxied = a.members
	return &q
}

// GroupsFromProxy says that a trusted proxy names its users' groups
// (ProxyConfig.Groups): until it has named a user's groups (after a
// restart; for a user who comes by a token or a share link before the
// proxy has seen them), that user is judged, wherever a rule names a
// group, by the least that any groups could give them. A rule that
// restricts a group then still applies to them; one that grants a group
// something does not. Call it before serving.
func (a *Access) GroupsFromProxy() { a.members.told.Store(true) }

// Now returns the time on the Access's clock.
func (a *Access) Now() time.Time { return a.now() }

// Policy returns the policy in force.
func (a *Access) Policy() *Policy { return a.policy.Load() }

// Reload puts p in force for the requests that start from now on, and
// forgets the cached sign-ins (a removed user or a changed password must
// not outlive the reload).
func (a *Access) Reload(p *Policy) {
	a.policy.Store(a.adopt(p))
	a.cache.RemoveFunc(func([32]byte, cached) bool { return true })
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
// ErrTooManyFailures when the client, or the user whose password it
// tries, has failed too often. A
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
		a.members.set(v.user, v.groups, v.partial)
	}
	return v.user, nil
}

// ChargeLink takes one failure, ahead of the check of a share link's
// password, from the budgets of r's client and of the link id (a link
// whose token verified): ErrTooManyFailures when either has none left, so
// that a link's password is guessed no faster than its budget allows
// however many clients try. Call right when the password was right: it
// gives the failure back.
func (a *Access) ChargeLink(r *http.Request, id string) (right func(), err error) {
	client := clientAddr(r)
	if !a.charge(client, "", id) {
		return nil, ErrTooManyFailures
	}
	return func() { a.refund(client, "", id) }, nil
}

// Failed counts a wrong secret r's client sent (an invalid share link)
// against its budget of failures.
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
	if user, err := p.token(pass); err == nil && user == name {
		// A token of the user's own, under their name: what it is
		// wherever basic auth carries a token, and no wrong password.
		return name, nil
	}
	key := credentialKey(name, pass)
	now := a.now()
	if c, hit := a.cache.Get(key); hit && now.Before(c.until) && c.user == name {
		return name, nil
	}
	ok, err := a.checkPassword(r, client, name, u.password, pass)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errFailedCharged
	}
	a.cache.Add(key, cached{user: name, until: now.Add(cacheTTL)})
	return name, nil
}

// errFailedCharged is a wrong password whose failure was counted before
// its hash was checked: ErrBadCredential, not to be counted twice.
var errFailedCharged = fmt.Errorf("%w (counted)", ErrBadCredential)

// checkPassword checks pass, user's password, against its hash under
// the two bounds that keep a flood of sign-ins from taking the server's
// memory and cores: the failure budgets of the client and of the user are
// charged before the hash is computed (and given back when the password
// was right), so that a client or a user with no failures left costs no
// hash at all; and at most one hash per core runs at once, the others
// waiting up to hashWait for a slot and then being refused with ErrBusy.
func (a *Access) checkPassword(r *http.Request, client, user string, h *hash, pass string) (bool, error) {
	if !a.charge(client, user, "") {
		return false, ErrTooManyFailures
	}
	t := time.NewTimer(hashWait)
	defer t.Stop()
	select {
	case a.hashing <- struct{}{}:
	case <-t.C:
		a.refund(client, user, "")
		return false, ErrBusy
	case <-r.Context().Done():
		a.refund(client, user, "")
		return false, r.Context().Err()
	}
	ok := h.matches(pass)
	<-a.hashing
	if ok {
		a.refund(client, user, "")
	}
	return ok, nil
}

// charge takes one failure, ahead of a check, from the budgets of client
// and of user and link (each "" for none), or from none of them when any
// has none left: it reports whether it took them.
func (a *Access) charge(client, user, link string) bool {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	defer a.counted()
	now := a.now()
	if a.clients.left(client, now) < 1 || user != "" && a.users.left(user, now) < 1 || link != "" && a.links.left(link, now) < 1 {
		return false
	}
	a.clients.take(client, now)
	if user != "" {
		a.users.take(user, now)
	}
	if link != "" {
		a.links.take(link, now)
	}
	return true
}

// refund gives back what charge took.
func (a *Access) refund(client, user, link string) {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	defer a.counted()
	now := a.now()
	a.clients.give(client, now)
	if user != "" {
		a.users.give(user, now)
	}
	if link != "" {
		a.links.give(link, now)
	}
}

// counted keeps a.failing current; a.failMu is held.
func (a *Access) counted() {
	a.failing.Store(int32(a.clients.Len() + a.users.Len() + a.links.Len()))
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
	defer a.counted()
	return a.clients.left(client, a.now()) < 1
}

// failed counts a failed credential of client.
func (a *Access) failed(client string) {
	a.failMu.Lock()
	defer a.failMu.Unlock()
	defer a.counted()
	a.clients.fail(client, a.now())
}

// RetryAfter is the Retry-After of a 429 for too many failures, in
// seconds: when the client, the user or the link has one try back.
const RetryAfter = "1"

// clientAddr is the client failures are counted by: its address, an IPv6
// address by its /64 (behind a trusted proxy, the address the proxy
// names: see Proxies).
func clientAddr(r *http.Request) string { return largo.ClientOf(r.RemoteAddr) }
