// Package expiry removes files whose time is up.
//
// A file expires by one of two things. An access file's [[expire]] table
// (auth.Expire) gives every file under a path a time to live, counted
// from its landing: its modification time, which is the moment a write
// through the server committed it, and for a file that arrived by other
// means (copied onto the disk, put into the bucket directly) the time
// its store gives it. A drop box link with a file TTL (links.Link.FileTTL)
// gives each file that lands through it its own: at commit, the write
// pipeline tells the Expiry (ingest.Lander), which names the link and
// when the file expires in the file's record (record.File) and keeps an
// index of the files that expire, with their version (ETag), in the
// store's state area, under "expiry/", for the sweep to read without a
// pass over every file's record. An entry holds only for its version: a
// file replaced since is no longer the one that expired, and is removed
// only if a table covers it. When both hold, the earlier time wins.
//
// The sweep (Expiry.Sweep, run every --expiry-sweep) walks the paths the
// tables name and reads the records, and removes each expired file
// through the write pipeline (the removal's checks, WebDAV locks; the
// digest and the quotas' count forgotten, and an expired notification
// sent: ingest.Pipeline.Expired), as the server, under If-Match of the
// version that expired: a file changed meanwhile stays. Each removal is
// logged (name, why, age) and counted.
//
// The listings ask Expires, which answers from the tables in force and
// the records read at the last sweep or written here since: a record
// written by another instance serving the same bucket shows once this
// one has swept.
package expiry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"largo"
	"largo/auth"
	"largo/gate"
	"largo/ingest"
	"largo/links"
	"largo/record"
)

// Observer receives the events that expiry metrics are made of.
// Implementations must be safe for concurrent use.
type Observer interface {
	// Expired is called for each file removed, with why: "rule" (an
	// access file's table) or "link" (a drop box's file TTL).
	Expired(why string)
}

// Config configures an Expiry. Access is required.
type Config struct {
	// Access holds the access policy in force, whose [[expire]] tables
	// are read at each sweep and each listing (a reload takes effect at
	// once).
	Access *auth.Access
	// State keeps the records of files that landed through drop boxes
	// with a file TTL; nil keeps none (such files then never expire).
	State largo.State
	// Gate tells the drop box a write came through (Gate.DropBox), whose
	// file TTL is read; nil: no link gives one.
	Gate *gate.Gate
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// Logger receives a line per removal and the sweep's troubles; nil
	// discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Expiry keeps, answers and carries out the expiry of files. Create one
// with New; it is safe for concurrent use.
type Expiry struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	records map[string]Record // by file name
}

// Record is what is kept of a file that landed through a drop box whose
// files expire.
type Record struct {
	// Name is the file's name in the store.
	Name string `json:"name"`
	// ETag is the version that landed.
	ETag string `json:"etag"`
	// Landed and Expires are when it landed and when it expires.
	Landed  time.Time `json:"landed"`
	Expires time.Time `json:"expires"`
	// Link is the ID of the drop box it came through.
	Link string `json:"link"`
}

// Prefix is where records live in the state area.
const Prefix = "expiry/"

// Key returns the state key of the record of the file name: a fixed
// length, whatever the name.
func Key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return Prefix + hex.EncodeToString(sum[:])
}

// New returns the Expiry of cfg.
func New(cfg Config) *Expiry {
	e := &Expiry{cfg: cfg, log: cfg.Logger, records: map[string]Record{}}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.cfg.Now == nil {
		e.cfg.Now = time.Now
	}
	return e
}

var _ ingest.Lander = (*Expiry)(nil)

// Landed keeps the expiry of a file committed through a drop box whose
// files expire (ctx's principal holds it); a file written by anyone else
// drops the record of the name's earlier version, if this instance has
// one. It implements ingest.Lander.
func (e *Expiry) Landed(ctx context.Context, name string, in largo.Info, rec *record.File) {
	if e.cfg.State == nil {
		return
	}
	var l *links.Link
	if e.cfg.Gate != nil {
		l = e.cfg.Gate.DropBox(ctx)
	}
	if l == nil || l.FileTTL <= 0 || in.ETag == "" {
		e.mu.Lock()
		_, had := e.records[name]
		delete(e.records, name)
		e.mu.Unlock()
		if had {
			if err := e.cfg.State.Delete(ctx, Key(name)); err != nil {
				e.log.Warn("expiry: dropping the record of a replaced file", "name", name, "err", err)
			}
		}
		return
	}
	landed := landedBy(in.ModTime)
	if landed.IsZero() {
		landed = e.cfg.Now()
	}
	r := Record{Name: name, ETag: in.ETag, Landed: landed.UTC(), Expires: landed.Add(time.Duration(l.FileTTL) * time.Second).UTC(), Link: l.ID}
	if rec != nil {
		rec.Link, rec.Expires = r.Link, r.Expires
	}
	b, _ := json.Marshal(r)
	if err := e.cfg.State.Put(context.WithoutCancel(ctx), Key(name), b); err != nil {
		// The file stays; it will not expire. The write is not failed for it.
		e.log.Error("expiry: keeping the expiry of a file", "name", name, "err", err)
		return
	}
	e.mu.Lock()
	e.records[name] = r
	e.mu.Unlock()
}

// Expires returns when the file name, in the version in, expires: by the
// table that covers it, or by its record, whichever is earlier.
func (e *Expiry) Expires(name string, in largo.Info) (time.Time, bool) {
	if in.IsDir {
		return time.Time{}, false
	}
	var at time.Time
	if after, ok := e.cfg.Access.Policy().ExpiryOf(name); ok && !in.ModTime.IsZero() {
		at = landedBy(in.ModTime).Add(after)
	}
	e.mu.Lock()
	r, ok := e.records[name]
	e.mu.Unlock()
	if ok && r.ETag == in.ETag && (at.IsZero() || r.Expires.Before(at)) {
		at = r.Expires
	}
	return at, !at.IsZero()
}

// Sweep removes every file whose time is up through writes, the write
// pipeline of the gate's store, and returns how many it removed. It
// reads the records first (dropping those of files gone or replaced),
// then walks the paths the tables name. A file it may not remove now
// (locked, changed meanwhile) is left for the next sweep.
func (e *Expiry) Sweep(ctx context.Context, writes *ingest.Pipeline) (int, error) {
	ctx = gate.With(ctx, gate.Server())
	n, err := e.sweepRecords(ctx, writes)
	m, err2 := e.sweepRules(ctx, writes)
	return n + m, errors.Join(err, err2)
}

// sweepRecords reads every record, keeps the live ones in memory and
// removes the files whose record expired.
func (e *Expiry) sweepRecords(ctx context.Context, writes *ingest.Pipeline) (int, error) {
	st := e.cfg.State
	if st == nil {
		return 0, nil
	}
	now := e.cfg.Now()
	live := map[string]Record{}
	removed := 0
	var errs []error
	for rec, err := range st.List(ctx, Prefix) {
		if err != nil {
			errs = append(errs, err)
			break
		}
		b, err := st.Get(ctx, rec.Key)
		if errors.Is(err, largo.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) != nil || Key(r.Name) != rec.Key {
			e.log.Warn("expiry: dropping an unreadable record", "key", rec.Key)
			st.Delete(ctx, rec.Key)
			continue
		}
		in, err := writes.Store().Stat(ctx, r.Name)
		switch {
		case errors.Is(err, largo.ErrNotFound) || err == nil && (in.IsDir || in.ETag != r.ETag):
			// Gone, or replaced: the record held for a version that is
			// no longer there.
			st.Delete(ctx, rec.Key)
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		case now.Before(r.Expires):
			live[r.Name] = r
			continue
		}
		ok, err := e.remove(ctx, writes, r.Name, in, "link", r.Landed, slog.String("link", r.Link))
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed++
			st.Delete(ctx, rec.Key)
		} else {
			live[r.Name] = r
		}
	}
	e.mu.Lock()
	e.records = live
	e.mu.Unlock()
	return removed, errors.Join(errs...)
}

// sweepRules walks the paths the access file's tables name and removes
// the files their table says are expired.
func (e *Expiry) sweepRules(ctx context.Context, writes *ingest.Pipeline) (int, error) {
	pol := e.cfg.Access.Policy()
	removed := 0
	var errs []error
	for _, root := range roots(pol.Expires()) {
		now := e.cfg.Now()
		err := largo.WalkDir(ctx, writes.Store(), root, func(name string, in largo.Info, err error) error {
			switch {
			case err != nil:
				if !errors.Is(err, largo.ErrNotFound) {
					errs = append(errs, err) // the rest is swept still
				}
				return nil
			case in.IsDir || in.Link:
				// A link's file expires where it is, by the table there.
				return nil
			}
			after, ok := pol.ExpiryOf(name)
			if !ok || in.ModTime.IsZero() || now.Before(landedBy(in.ModTime).Add(after)) {
				return nil
			}
			ok, err = e.remove(ctx, writes, name, in, "rule", in.ModTime, slog.String("after", largo.FormatAge(after)))
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				removed++
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// roots returns the paths of the tables that expire anything, less those
// below another: each tree is walked once.
func roots(es []auth.Expire) []string {
	var paths []string
	for _, x := range es {
		if x.After > 0 {
			paths = append(paths, x.Path)
		}
	}
	slices.SortFunc(paths, func(a, b string) int { return len(a) - len(b) })
	var out []string
	for _, p := range paths {
		if !slices.ContainsFunc(out, func(r string) bool { return largo.Within(r, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// remove removes the file name if it is still the version in, through
// the write pipeline, and logs, counts and tells of the removal. ok is
// false for a file left as it is (changed meanwhile, locked).
func (e *Expiry) remove(ctx context.Context, p *ingest.Pipeline, name string, in largo.Info, why string, landed time.Time, detail slog.Attr) (ok bool, err error) {
	if in.ETag == "" {
		return false, nil // no version to remove under: left alone
	}
	cond := largo.Condition{IfMatch: in.ETag}
	rm, err := p.CheckRemove(ctx, name, cond, nil)
	if err == nil {
		err = rm.Remove(ctx, name, largo.RemoveOptions{Condition: cond})
	}
	switch {
	case errors.Is(err, largo.ErrPrecondition), errors.Is(err, largo.ErrLocked):
		e.log.Info("expiry: file left for now", "name", name, "why", err)
		return false, nil
	case errors.Is(err, largo.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("removing expired %s: %w", name, err)
	}
	p.Expired(ctx, name, in) // its digest and quota forgotten, an expired event sent
	age := e.cfg.Now().Sub(landed).Round(time.Second)
	e.log.Info("expired file removed", "name", name, "why", why, detail, "age", age.String(), "size", in.Size)
	if e.cfg.Observer != nil {
		e.cfg.Observer.Expired(why)
	}
	return true, nil
}

// landedBy returns the latest moment a file stamped mod may have landed.
// A bucket keeps whole seconds (Last-Modified), so a stamp without a
// fraction stands for any moment of that second: the file is counted as
// landed at its end, and so never removed before its time.
func landedBy(mod time.Time) time.Time {
	if mod.IsZero() || mod.Nanosecond() != 0 {
		return mod
	}
	return mod.Add(time.Second - time.Nanosecond)
}
