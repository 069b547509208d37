package dav

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/gate"
	"largo/ingest"
	"largo/record"
	"largo/wire"
)

// Locks are WebDAV's write locks, kept as records of a store's state
// area (a record.Table): one record per locked name, created only where
// none is and replaced or removed only as it was read (record.Table.Update:
// If-None-Match: * and If-Match on a bucket, a link and a compare under a
// lock file on a folder), so that of two instances locking one name at
// once, or taking over one expired lock, exactly one wins, and a refresh
// or UNLOCK that read a lock before it expired and was taken again leaves
// the new holder's alone, while two refreshes of one lock by its holder
// both extend it. A lock's
// token carries its name, so that UNLOCK and a refresh find the record
// with one read. Expired locks are ignored, taken over when their name is
// locked again, and removed by Sweep.
//
// A lock is bound to the principal that took it (RFC 4918, 6.4; package
// gate): its record keeps who took it, and its token is of use to them
// alone. Presented by anyone else it counts as no token: it neither lets
// a write through (423), nor refreshes or removes the lock (403). A
// request without a principal takes no lock and holds none.
//
// Locks implements ingest.Guard, through which every write protocol
// honours them. Locks is safe for concurrent use.
type Locks struct {
	st    largo.State
	locks *record.Table[lock] // keyed by escape(name)
	now   func() time.Time
	// where maps a name as spelled to the physical name the store acts
	// on (Physical); nil: as spelled.
	where func(ctx context.Context, name string, entry bool) string
}

// Physical makes the locks hold what the store acts on rather than names
// as spelled: where maps a name to its physical name, its folder reached
// through whatever links lead there and, unless entry, a link at its end
// followed too (gate.Gate.Where). A write is judged on its entry; a lock
// is taken on what its name reaches, so that a lock taken through a link
// to a folder holds the folder, and a write below it by any name that
// reaches it is judged by the lock. Call it before the locks are used.
func (ls *Locks) Physical(where func(ctx context.Context, name string, entry bool) string) {
	ls.where = where
}

// entry returns the physical name of the entry name (Physical).
func (ls *Locks) entry(ctx context.Context, name string) string {
	if ls.where == nil {
		return name
	}
	return ls.where(ctx, name, true)
}

// reached returns the physical name of what name reaches, a link at its
// end followed (Physical).
func (ls *Locks) reached(ctx context.Context, name string) string {
	if ls.where == nil {
		return name
	}
	return ls.where(ctx, name, false)
}

var _ ingest.Guard = (*Locks)(nil)

// MaxTimeout bounds a lock's life: a lock asked for without a timeout, or
// for longer, ends after it unless refreshed, so that a client that
// vanished cannot hold a file for ever.
const MaxTimeout = time.Hour

// lockPrefix is where the lock records are in the state area.
const lockPrefix = "dav/locks/"

// NewLocks returns the locks kept in st, which must create, replace and
// remove records conditionally (largo.StateCreator, largo.StateSwapper);
// now is the clock (nil: time.Now).
func NewLocks(st largo.State, now func() time.Time) (*Locks, error) {
	if now == nil {
		now = time.Now
	}
	rs := record.New(st, record.Options{Now: now})
	if !rs.Conditional() {
		return nil, fmt.Errorf("locks: the state area cannot create, replace and remove records conditionally: %w", largo.ErrUnsupported)
	}
	return &Locks{st: st, locks: record.NewTable[lock](rs, lockPrefix, record.TableOptions{}), now: now}, nil
}

// lock is a lock's record.
type lock struct {
	Token     string    `json:"token"`
	Root      string    `json:"root"`
	ZeroDepth bool      `json:"zero_depth"`
	Expires   time.Time `json:"expires"`
	Timeout   int64     `json:"timeout"` // seconds, as granted
	Owner     string    `json:"owner,omitempty"`
	// Holder is who took the lock: their principal's text form
	// (gate.Principal.String).
	Holder string `json:"holder,omitempty"`
}

func (l *lock) live(now time.Time) bool { return now.Before(l.Expires) }

// heldBy reports whether who (a principal's text form, "" for none) took
// l. A record without a holder, written before holders were kept, is no
// one's: its token unlocks nothing, and it ends when it expires.
func (l *lock) heldBy(who string) bool { return who != "" && l.Holder == who }

// holder returns the text form of ctx's principal, "" when it carries
// none.
func holder(ctx context.Context) string {
	p, ok := gate.From(ctx)
	if !ok {
		return ""
	}
	return p.String()
}

// covers reports whether the lock applies to name.
func (l *lock) covers(name string) bool {
	return name == l.Root || !l.ZeroDepth && largo.Below(l.Root, name)
}

// details returns what the library answers of l, whose root it names
// root.
func (l *lock) details(root string) webdav.LockDetails {
	return webdav.LockDetails{Root: root, Duration: time.Duration(l.Timeout) * time.Second, OwnerXML: l.Owner, ZeroDepth: l.ZeroDepth}
}

// escape turns a name into one element of a state key: every record of
// a kind lies in one folder, the root's included ("_"), and the records
// of the names below a folder share a prefix (escape(dir) + "%2F").
func escape(name string) string { return "_" + url.PathEscape(name) }

// unescape is the inverse of escape.
func unescape(elem string) (string, error) {
	rest, ok := strings.CutPrefix(elem, "_")
	if !ok {
		return "", fmt.Errorf("state key %q: not an escaped name", elem)
	}
	return url.PathUnescape(rest)
}

// belowPrefix is the key prefix of the records of the names below dir
// (for the root, its own record too, which callers skip).
func belowPrefix(kind, dir string) string {
	if dir == "" {
		return kind + "_"
	}
	return kind + escape(dir) + "%2F"
}

// tokenScheme starts every token: RFC 4918's opaquelocktoken URI, a UUID
// and, as its path, the locked name.
const tokenScheme = "opaquelocktoken:"

func newToken(name string) string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return tokenScheme + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + "/" + escape(name)
}

// tokenName returns the name a token of ours locks.
func tokenName(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, tokenScheme)
	if !ok {
		return "", false
	}
	_, esc, ok := strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	name, err := unescape(esc)
	return name, err == nil
}

// get returns the live lock on exactly name, or nil.
func (ls *Locks) get(ctx context.Context, name string) (*lock, error) {
	l, err := ls.locks.Get(ctx, escape(name))
	if errors.Is(err, largo.ErrNotFound) || err == nil && !l.live(ls.now()) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock record of %s: %w", name, err)
	}
	return &l, nil
}

// Sweep removes the records of the locks that expired, each only if no
// one took it over meanwhile, and returns how many it removed. A record
// that cannot be read is left alone. It is safe to run in every instance
// at once.
func (ls *Locks) Sweep(ctx context.Context) (int, error) {
	return ls.locks.Sweep(ctx, func(_ context.Context, e record.Entry[lock]) bool {
		return !e.Value.live(ls.now())
	})
}

// below yields the live locks on the names below dir.
func (ls *Locks) below(ctx context.Context, dir string) ([]*lock, error) {
	var out []*lock
	for rec, err := range ls.st.List(ctx, belowPrefix(lockPrefix, dir)) {
		if err != nil {
			return nil, err
		}
		name, err := unescape(strings.TrimPrefix(rec.Key, lockPrefix))
		if err != nil || name == dir {
			continue
		}
		l, err := ls.get(ctx, name)
		if err != nil {
			return nil, err
		}
		if l != nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// any reports whether the state area holds any lock record at all: one
// listing that spares a write the look-ups of its name's folders when
// nothing is locked.
func (ls *Locks) any(ctx context.Context) (bool, error) {
	for _, err := range ls.locks.Keys(ctx) {
		return err == nil, err
	}
	return false, nil
}

// covering returns the live locks that apply to name: its own, and those
// of its folders that hold their whole tree.
func (ls *Locks) covering(ctx context.Context, name string) ([]*lock, error) {
	var out []*lock
	for n := name; ; n = largo.Parent(n) {
		l, err := ls.get(ctx, n)
		if err != nil {
			return nil, err
		}
		if l != nil && l.covers(name) {
			out = append(out, l)
		}
		if n == "" {
			return out, nil
		}
	}
}

// Locked implements ingest.Guard. Of tokens, only those of live locks
// that ctx's principal took unlock anything; those of another's locks
// count as none. A request that presents tokens, none of which is a live
// lock, fails its If header (RFC 4918, 10.4): an error wrapping
// largo.ErrPrecondition (412).
func (ls *Locks) Locked(ctx context.Context, name string, tree bool, tokens []string) error {
	name = ls.entry(ctx, name)
	own, unknown, err := ls.sortTokens(ctx, tokens, holder(ctx))
	if err != nil {
		return err
	}
	if len(own) == 0 && unknown == 0 {
		if ok, err := ls.any(ctx); err != nil || !ok {
			return err
		}
	}
	held, err := ls.covering(ctx, name)
	if err != nil {
		return err
	}
	if tree {
		more, err := ls.below(ctx, name)
		if err != nil {
			return err
		}
		held = append(held, more...)
	}
	if len(held) == 0 && len(own) == 0 && unknown > 0 {
		return fmt.Errorf("%s: no lock of the If header's tokens: %w", name, largo.ErrPrecondition)
	}
	for _, l := range held {
		if !slices.Contains(own, l.Token) {
			return fmt.Errorf("%s: %w by %s", name, largo.ErrLocked, l.Root)
		}
	}
	return nil
}

// sortTokens sorts the tokens a request presents: own are those of live
// locks who took, unknown counts those of no live lock; the tokens of
// live locks of others are dropped.
func (ls *Locks) sortTokens(ctx context.Context, tokens []string, who string) (own []string, unknown int, err error) {
	for _, t := range tokens {
		l, err := ls.byToken(ctx, t)
		switch {
		case errors.Is(err, webdav.ErrNoSuchLock):
			unknown++
		case err != nil:
			return nil, 0, err
		case l.heldBy(who):
			own = append(own, t)
		}
	}
	return own, unknown, nil
}

// Renamed implements ingest.Guard: the dead properties of from and of all
// below it follow it to to, whatever front end moved it. A failure leaves
// some behind, at their old names, where a new file would find them: they
// are removed then, as Forget does.
func (ls *Locks) Renamed(ctx context.Context, from, to string) {
	if moveProps(ctx, ls.st, from, to) != nil {
		ls.Forget(ctx, from)
	}
}

// Forget implements ingest.Guard: the dead properties of name and of all
// below it go. Locks stay until they are unlocked or expire: a lock
// holds a name, whether a file is there or not (RFC 4918, 7.3).
func (ls *Locks) Forget(ctx context.Context, name string) {
	for _, kind := range []string{propPrefix} {
		ls.st.Delete(ctx, kind+escape(name))
		var keys []string
		for rec, err := range ls.st.List(ctx, belowPrefix(kind, name)) {
			if err != nil {
				break
			}
			if rec.Key != kind+escape(name) {
				keys = append(keys, rec.Key)
			}
		}
		for _, k := range keys {
			ls.st.Delete(ctx, k)
		}
	}
}

// MaxOwner bounds the owner a LOCK records (its XML, as sent): the
// record of a lock is read by every write below its name, and must stay
// small.
const MaxOwner = 16 << 10

// errOwnerTooLong refuses a LOCK whose owner is over MaxOwner.
var errOwnerTooLong = wire.Refuse(http.StatusBadRequest, "lock owner too long: at most 16 KiB")

// errNoHolder refuses a lock asked for without a principal.
var errNoHolder = fmt.Errorf("a lock without a principal: %w", largo.ErrPermission)

// create takes a new lock on name for ctx's principal, as d details it
// (its depth, timeout and owner; its root is name).
func (ls *Locks) create(ctx context.Context, now time.Time, name string, d webdav.LockDetails) (string, error) {
	if len(d.OwnerXML) > MaxOwner {
		return "", errOwnerTooLong
	}
	who := holder(ctx)
	if who == "" {
		return "", errNoHolder
	}
	for n := name; n != ""; {
		n = largo.Parent(n)
		l, err := ls.get(ctx, n)
		if err != nil {
			return "", err
		}
		if l != nil && l.covers(name) {
			return "", webdav.ErrLocked
		}
	}
	if !d.ZeroDepth {
		below, err := ls.below(ctx, name)
		if err != nil {
			return "", err
		}
		if len(below) > 0 {
			return "", webdav.ErrLocked
		}
	}
	timeout := d.Duration
	if timeout <= 0 || timeout > MaxTimeout {
		timeout = MaxTimeout
	}
	l := lock{Token: newToken(name), Root: name, ZeroDepth: d.ZeroDepth, Expires: now.Add(timeout), Timeout: int64(timeout / time.Second), Owner: d.OwnerXML, Holder: who}
	// Where a record is, it is taken over only if it expired, and only as
	// it was read: of several instances taking it at once, one wins, and
	// the others find its lock live when they read again.
	_, err := ls.locks.Update(ctx, escape(name), func(old *lock, exists bool) (record.Change, error) {
		if exists && old.live(now) {
			return record.Keep, webdav.ErrLocked
		}
		*old = l
		return record.Write, nil
	})
	if errors.Is(err, record.ErrConflict) {
		return "", webdav.ErrLocked // others kept taking it
	}
	if err != nil {
		return "", err
	}
	return l.Token, nil
}

// byToken returns the live lock of token, or ErrNoSuchLock.
func (ls *Locks) byToken(ctx context.Context, token string) (*lock, error) {
	name, ok := tokenName(token)
	if !ok {
		return nil, webdav.ErrNoSuchLock
	}
	l, err := ls.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if l == nil || l.Token != token {
		return nil, webdav.ErrNoSuchLock
	}
	return l, nil
}

// errNotHolder refuses the refresh or removal of a lock by another
// principal than the one that took it.
var errNotHolder = wire.Refuse(http.StatusForbidden, "forbidden: this lock was taken by someone else; only its holder may refresh or remove it")

// refresh extends the lock of token, if ctx's principal took it, only as
// it was read: a lock that expired and was taken over meanwhile is no
// longer the token's.
func (ls *Locks) refresh(ctx context.Context, now time.Time, token string, d time.Duration) (*lock, error) {
	if d <= 0 || d > MaxTimeout {
		d = MaxTimeout
	}
	l, err := ls.change(ctx, token, ls.extending(holder(ctx), token, now, d))
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// unlock removes the lock of token, if ctx's principal took it, only as
// it was read.
func (ls *Locks) unlock(ctx context.Context, token string) error {
	_, err := ls.change(ctx, token, ls.removing(holder(ctx), token))
	return err
}

// change changes the record of the lock of token by f (extending or
// removing), only as it was read (record.Table.Update).
func (ls *Locks) change(ctx context.Context, token string, f func(*lock, bool) (record.Change, error)) (lock, error) {
	name, ok := tokenName(token)
	if !ok {
		return lock{}, webdav.ErrNoSuchLock
	}
	return ls.locks.Update(ctx, escape(name), f)
}

// holding checks that the record l (exists false: none) is the live lock
// of token, and that who took it.
func (ls *Locks) holding(l *lock, exists bool, who, token string) error {
	switch {
	case !exists || l.Token != token || !l.live(ls.now()):
		return webdav.ErrNoSuchLock
	case !l.heldBy(who):
		return errNotHolder
	}
	return nil
}

// extending is refresh's change: the lock of token, taken by who, is
// extended by d from now.
func (ls *Locks) extending(who, token string, now time.Time, d time.Duration) func(*lock, bool) (record.Change, error) {
	return func(l *lock, exists bool) (record.Change, error) {
		if err := ls.holding(l, exists, who, token); err != nil {
			return record.Keep, err
		}
		l.Expires, l.Timeout = now.Add(d), int64(d/time.Second)
		return record.Write, nil
	}
}

// removing is unlock's change: the lock of token, taken by who, goes.
func (ls *Locks) removing(who, token string) func(*lock, bool) (record.Change, error) {
	return func(l *lock, exists bool) (record.Change, error) {
		if err := ls.holding(l, exists, who, token); err != nil {
			return record.Keep, err
		}
		return record.Remove, nil
	}
}

// confirm checks a list of an If header's conditions against the names
// a request changes: the list holds when one of its tokens is a live lock
// who took (the library reads its entity tags), and each name is then
// either locked by one of those locks or not locked at all. (The
// library's own lock system asks every name to be locked by the list,
// which refuses the MOVE of a locked file to a name no one locked, as
// davfs2 sends it.) The tokens of others' locks count as none: a list of
// only those holds as no If header would, where no lock is; a name
// locked by a lock the list does not hold fails it with an error
// wrapping largo.ErrLocked.
func (ls *Locks) confirm(ctx context.Context, names []string, conds []webdav.Condition, who string) error {
	var own []string
	others := false
	for _, c := range conds {
		if c.Token == "" || c.Not {
			continue
		}
		l, err := ls.byToken(ctx, c.Token)
		switch {
		case errors.Is(err, webdav.ErrNoSuchLock):
		case err != nil:
			return err
		case l.heldBy(who):
			own = append(own, c.Token)
		default:
			others = true
		}
	}
	if len(own) == 0 && !others {
		return webdav.ErrConfirmationFailed
	}
	for _, n := range names {
		held, err := ls.covering(ctx, ls.entry(ctx, n))
		if err != nil {
			return err
		}
		for _, l := range held {
			if !slices.Contains(own, l.Token) {
				return fmt.Errorf("%s: %w by %s", n, largo.ErrLocked, l.Root)
			}
		}
	}
	return nil
}

// requestLocks is the webdav.LockSystem of one request: the Locks, seen
// by the request's principal, and the tokens of the locks the library
// takes for the request itself (the locks of a request without an If
// header), which its own writes must pass.
type requestLocks struct {
	*Locks
	// ctx is the request's context, which carries its principal; the
	// lock system's methods get none.
	ctx context.Context
	// at maps the library's paths to store names.
	at scope
	// owner is the owner of a LOCK's body as lockOwner read it, which is
	// recorded in place of the bytes the library kept; ownerOK is false
	// when lockOwner could not read one.
	owner   string
	ownerOK bool
	made    []string
	// target, when scoped, is the name the request is at: UNLOCK and a
	// refresh apply only to a lock whose scope holds it (RFC 4918,
	// 9.10.2 and 9.11.1), else they fail as an unknown token does.
	target string
	scoped bool
	// failed is the error of a lock not taken, which the answer tells
	// (see answer).
	failed error
}

// context returns a context for one state operation: the request's
// values (its principal), without its cancellation, since a lock the
// library took for the request must be released even when the client
// left, and within lockTimeout.
func (rl *requestLocks) context() (context.Context, context.CancelFunc) {
	ctx := rl.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
}

// inScope checks that the lock of token holds the request's name.
// The locks the library takes for the request itself (at a COPY's or
// MOVE's destination) are its own to release.
func (rl *requestLocks) inScope(ctx context.Context, token string) error {
	if !rl.scoped || slices.Contains(rl.made, token) {
		return nil
	}
	l, err := rl.byToken(ctx, token)
	if err != nil {
		return err
	}
	if !l.covers(rl.reached(ctx, rl.target)) && !l.covers(rl.entry(ctx, rl.target)) {
		return webdav.ErrNoSuchLock
	}
	return nil
}

var _ webdav.LockSystem = (*requestLocks)(nil)

// lockTimeout bounds each state operation of the lock system, whose
// methods get no context.
const lockTimeout = 30 * time.Second

func (rl *requestLocks) Confirm(now time.Time, name0, name1 string, conds ...webdav.Condition) (func(), error) {
	ctx, cancel := rl.context()
	defer cancel()
	var names []string
	for _, p := range []string{name0, name1} {
		if p != "" { // the library's "no name"
			names = append(names, rl.at.name(p))
		}
	}
	err := rl.confirm(ctx, names, conds, holder(ctx))
	if errors.Is(err, largo.ErrLocked) {
		// Told as 423 if no other list of the If header holds.
		rl.failed = err
		return nil, webdav.ErrConfirmationFailed
	}
	if err != nil {
		return nil, err
	}
	rl.failed = nil
	for _, c := range conds {
		if c.Token != "" {
			rl.made = append(rl.made, c.Token)
		}
	}
	return func() {}, nil
}

func (rl *requestLocks) Create(now time.Time, d webdav.LockDetails) (string, error) {
	ctx, cancel := rl.context()
	defer cancel()
	if d.OwnerXML != "" {
		// The owner is shown in other documents (lockdiscovery): as XML
		// that stands on its own, else as text.
		if rl.ownerOK {
			d.OwnerXML = rl.owner
		} else {
			var b strings.Builder
			xml.EscapeText(&b, []byte(d.OwnerXML))
			d.OwnerXML = b.String()
		}
	}
	token, err := rl.create(ctx, now, rl.reached(ctx, rl.at.name(d.Root)), d)
	if err == nil {
		rl.made = append(rl.made, token)
	}
	if err != nil && err != webdav.ErrLocked {
		rl.failed = err
	}
	return token, err
}

func (rl *requestLocks) Refresh(now time.Time, token string, d time.Duration) (webdav.LockDetails, error) {
	ctx, cancel := rl.context()
	defer cancel()
	if err := rl.inScope(ctx, token); err != nil {
		return webdav.LockDetails{}, err
	}
	l, err := rl.refresh(ctx, now, token, d)
	if err != nil {
		if err != webdav.ErrNoSuchLock {
			rl.failed = err // the library's 500, told as what it is
		}
		return webdav.LockDetails{}, err
	}
	return l.details(rl.at.path(l.Root)), nil
}

func (rl *requestLocks) Unlock(now time.Time, token string) error {
	ctx, cancel := rl.context()
	defer cancel()
	if err := rl.inScope(ctx, token); err != nil {
		return err
	}
	err := rl.unlock(ctx, token)
	if err == errNotHolder {
		rl.failed = err
		return webdav.ErrForbidden
	}
	return err
}
