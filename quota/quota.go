// Package quota holds writes to quotas: per user and per path prefix, in
// bytes and in files. It implements ingest.Quota, so that every write,
// whatever protocol carries it, is admitted against the quotas before a
// byte of its body is read, and counted when it commits.
//
// What is counted:
//   - a path's usage is every file under it, whoever wrote it;
//   - a user's usage is the files they own: at every commit the file's
//     record (record.File, which the pipeline writes) names its owner
//     (the user who wrote it, or the maker of the share link it came
//     through) with its size and ETag, and a file counts for its owner
//     while its record still matches it. A file replaced behind largo's back stops
//     counting for anyone; one written behind its back counts for no
//     user, but counts for its paths.
//
// The usage is one record in the state area (quota/usage.json); each
// file's owner is in the file's record. Each Keeper adds what its own
// writes and removals change to a local tally, and adds the tally to the
// record every sync period (Run) by a compare-and-swap
// (record.Table.Update), reading back what other instances added: on a
// bucket shared by several instances, a quota may be overrun by what the
// other instances admitted within one sync period, and by no more. A
// server loads the record before it takes writes (Load), and adds its
// last changes when it stops (Close), after its writes have ended: a
// stop loses nothing that was counted.
//
// A reconcile pass (Reconcile) recomputes every counter from the truth:
// it walks the store under each path with a quota, and the records of
// files, checking each against its file (and dropping those whose file is
// gone or another: the one sweep of the records of files). It runs at start-up when no usage is recorded, every
// reconcile period, soon after a change it cannot count exactly (a folder
// removed or renamed, a file removed that no record describes, a quota
// of a new path), and on demand (largo usage --reconcile). Memory stays
// bounded: the walk streams, and only one counter per user and per path
// is kept.
//
// Writes in flight hold their announced size against every quota they
// fall under until they commit or end; a body of unknown length holds
// what it has received, and is refused when a quota has no room for
// more. A resumable upload holds the bytes it staged, as they arrive
// (AdmitBytes), until it is placed or ends: its file is admitted at its
// creation and when it is placed.
//
// A Keeper is safe for concurrent use.
package quota

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/record"
)

// Policy is where the quotas come from: the access policy in force
// (*auth.Policy), which a reload replaces.
type Policy interface {
	// UserQuota returns the quota of user, and whether one is given.
	UserQuota(user string) (auth.Quota, bool)
	// PathQuotas returns the quotas of paths.
	PathQuotas() []auth.Quota
}

// Config configures a Keeper. Store and State are required.
type Config struct {
	// Store is the store whose files are counted, seen by the server
	// itself (not through the access gate).
	Store largo.Store
	// State is the store's state area, where the usage is kept.
	State largo.State
	// Files are the records of files (package record), which name each
	// file's owner; nil: no owner is known, and users' usage is what the
	// writes of this process counted until a pass.
	Files *record.Files
	// Policy returns the quotas in force, asked at every write; nil
	// means only PerUser.
	Policy func() Policy
	// PerUser is the quota of every signed-in user the policy gives
	// none; the zero value means none.
	PerUser auth.Quota
	// Maker returns the user who made the share link ctx's principal
	// holds ("" for none): a link's writes count for its maker. Nil
	// counts them for nobody.
	Maker func(ctx context.Context) string
	// Logger receives what fails in the background; nil discards it.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Usage is what files take: bytes and a count.
type Usage struct {
	Bytes int64 `json:"bytes"`
	Files int64 `json:"files"`
}

// Add returns u and v together.
func (u Usage) Add(v Usage) Usage { return Usage{u.Bytes + v.Bytes, u.Files + v.Files} }

// Keeper counts the usage of a store against its quotas.
type Keeper struct {
	cfg Config

	mu      sync.Mutex
	base    tally // the record as last read or written
	pending tally // this instance's changes, not yet added to the record
	syncing tally // those being added now
	// log is pending change by change, with the time of each: a change
	// made before a reconcile pass began its walk is counted by the pass,
	// and is not added again.
	log  []change
	held tally // the writes in flight
	// dirty: something changed that only a reconcile pass counts.
	dirty bool
	// known are the paths the last pass counted.
	known map[string]bool
	// reconciled is when the last pass was, as recorded.
	reconciled time.Time
	// loaded: Load read the usage; found: there was a record to read.
	loaded, found bool

	// turn is held by the Sync running, so that syncs take turns.
	turn chan struct{}

	// The records of the state area: the usage (sync.go), and what
	// counts beside files (beside.go).
	usage           *record.Table[usageRecord]
	beside, folders *record.Table[extra]
}

var _ ingest.Quota = (*Keeper)(nil)

// New returns the Keeper of cfg. Load (or Run) reads the usage recorded;
// Close adds the last changes to it.
func New(cfg Config) *Keeper {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rs := record.New(cfg.State, record.Options{Now: cfg.Now})
	return &Keeper{cfg: cfg, base: newTally(), pending: newTally(), syncing: newTally(), held: newTally(), known: map[string]bool{}, turn: make(chan struct{}, 1),
		usage:   record.NewTable[usageRecord](rs, usagePrefix, record.TableOptions{}),
		beside:  record.NewTable[extra](rs, besidePrefix, record.TableOptions{}),
		folders: record.NewTable[extra](rs, foldersPrefix, record.TableOptions{}),
	}
}

// tally is a counter per user and per path.
type tally struct {
	Users map[string]Usage `json:"users"`
	Paths map[string]Usage `json:"paths"`
}

func newTally() tally { return tally{Users: map[string]Usage{}, Paths: map[string]Usage{}} }

// addTo adds u to the counter of key in m, and drops a counter back at
// zero.
func addTo(m map[string]Usage, key string, u Usage) {
	v := m[key].Add(u)
	if v == (Usage{}) {
		delete(m, key)
		return
	}
	m[key] = v
}

// merge adds every counter of o to t.
func (t tally) merge(o tally) {
	for k, u := range o.Users {
		addTo(t.Users, k, u)
	}
	for k, u := range o.Paths {
		addTo(t.Paths, k, u)
	}
}

// change is one change counted, and when.
type change struct {
	at time.Time
	t  tally
}

// quotaOf is one quota a write falls under.
type quotaOf struct {
	user  bool   // a user's, else a path's
	key   string // the user's name or the path
	label string // how the client is told of it
	q     auth.Quota
}

// owner returns who a write of ctx counts for: the signed-in user, or a
// share link's maker; "" for nobody. label names their quota to the
// client.
func (k *Keeper) owner(ctx context.Context) (user, label string) {
	p, ok := gate.From(ctx)
	if !ok {
		return "", ""
	}
	if u := p.UserName(); u != "" {
		return u, "user " + u
	}
	if p.LinkID() != "" && k.cfg.Maker != nil {
		if m := k.cfg.Maker(ctx); m != "" {
			return m, "the link's maker"
		}
	}
	return "", ""
}

// userQuota returns the quota of user.
func (k *Keeper) userQuota(pol Policy, user string) auth.Quota {
	if pol != nil {
		if q, ok := pol.UserQuota(user); ok {
			return q
		}
	}
	return k.cfg.PerUser
}

func (k *Keeper) policy() Policy {
	if k.cfg.Policy == nil {
		return nil
	}
	return k.cfg.Policy()
}

// pathQuotas returns the quotas of the paths name is under.
func pathQuotas(pol Policy, name string) []quotaOf {
	if pol == nil {
		return nil
	}
	var out []quotaOf
	for _, q := range pol.PathQuotas() {
		if largo.Within(q.Path, name) {
			out = append(out, quotaOf{key: q.Path, label: "/" + q.Path, q: q})
		}
	}
	return out
}

// paths returns the paths with a quota.
func (k *Keeper) paths() []string {
	pol := k.policy()
	if pol == nil {
		return nil
	}
	var out []string
	for _, q := range pol.PathQuotas() {
		out = append(out, q.Path)
	}
	return out
}

// used returns what the counter key of a user's (user) or a path's
// usage stands at, with what writes in flight hold. k.mu is held.
func (k *Keeper) used(user bool, key string) Usage {
	if user {
		return k.base.Users[key].Add(k.syncing.Users[key]).Add(k.pending.Users[key]).Add(k.held.Users[key])
	}
	return k.base.Paths[key].Add(k.syncing.Paths[key]).Add(k.pending.Paths[key]).Add(k.held.Paths[key])
}

// hold adds u to the writes in flight of q. k.mu is held.
func (k *Keeper) hold(q quotaOf, u Usage) {
	if q.user {
		addTo(k.held.Users, q.key, u)
	} else {
		addTo(k.held.Paths, q.key, u)
	}
}

// count adds u to this instance's changes, for user (when not "") and
// for every path with a quota that name is under.
func (k *Keeper) count(pol Policy, user, name string, u Usage) {
	c := change{at: k.cfg.Now(), t: newTally()}
	if user != "" {
		addTo(c.t.Users, user, u)
	}
	for _, q := range pathQuotas(pol, name) {
		addTo(c.t.Paths, q.key, u)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending.merge(c.t)
	k.log = append(k.log, c)
}

// markDirty asks for a reconcile pass soon.
func (k *Keeper) markDirty() {
	k.mu.Lock()
	k.dirty = true
	k.mu.Unlock()
}
