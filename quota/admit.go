package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"largo"
	"largo/ingest"
	"largo/record"
)

// Admit implements ingest.Quota: it refuses a write that would take a
// quota of its owner or of a path it is under past its limit, with a
// *largo.QuotaError, and holds its size with hold. A write that replaces
// a file is counted for what it adds: the new size less the old one,
// for the paths, and for its owner when the old file was theirs; a new
// file counts one file more.
func (k *Keeper) Admit(ctx context.Context, name string, size int64, hold bool, was *largo.Info) (ingest.Claim, error) {
	pol := k.policy()
	user, label := k.owner(ctx)
	qs := k.quotasOf(pol, user, label, name)
	c := &claim{k: k, pol: pol, name: name, user: user, size: max(size, 0), files: 1}
	var in largo.Info
	var err error
	if was != nil {
		in = *was
		if in == (largo.Info{}) {
			err = fmt.Errorf("%s: %w", name, largo.ErrNotFound) // nothing there
		}
	} else {
		in, err = k.cfg.Store.Stat(ctx, name)
	}
	switch {
	case err == nil && !in.IsDir:
		c.old, c.oldETag, c.replaces = in.Size, in.ETag, true
	case err != nil && !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir):
		return nil, err
	}
	if len(qs) == 0 {
		c.done = true
		return c, nil
	}
	// What each quota gets back of the file replaced.
	back := make([]Usage, len(qs))
	if c.replaces {
		rec, recErr := k.ownerOf(ctx, name)
		for i, q := range qs {
			switch {
			case !q.user:
				back[i] = Usage{c.old, 1}
			case recErr == nil && rec.User == q.key && rec.ETag == c.oldETag:
				back[i] = Usage{rec.Size, 1}
			}
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, q := range qs {
		u := k.used(q.user, q.key)
		add := Usage{c.size - back[i].Bytes, 1 - back[i].Files}
		if err := over(q, u, add, size < 0); err != nil {
			return nil, err
		}
	}
	if !hold {
		c.done = true
		return c, nil
	}
	c.qs, c.back = qs, back
	for _, q := range qs {
		k.hold(q, Usage{c.size, 1})
	}
	c.held, c.got = c.size, 0
	return c, nil
}

// AdmitBytes implements ingest.Quota: the claim of a resumable upload's
// bytes, held as they are staged (Grow), which counts no file and gives
// nothing back of a file the upload will replace: until it is placed,
// what it staged takes room beside that file. Only a quota with no room
// left refuses it now.
func (k *Keeper) AdmitBytes(ctx context.Context, name string) (ingest.Claim, error) {
	pol := k.policy()
	user, label := k.owner(ctx)
	qs := k.quotasOf(pol, user, label, name)
	c := &claim{k: k, pol: pol, name: name, user: user}
	if len(qs) == 0 {
		c.done = true
		return c, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, q := range qs {
		if err := over(q, k.used(q.user, q.key), Usage{}, true); err != nil {
			return nil, err
		}
	}
	c.qs, c.back = qs, make([]Usage, len(qs))
	return c, nil
}

// quotasOf returns the quotas a write to name by user (labelled label to
// the client) falls under: the user's, and those of the paths name is
// under.
func (k *Keeper) quotasOf(pol Policy, user, label, name string) []quotaOf {
	var qs []quotaOf
	if user != "" {
		if q := k.userQuota(pol, user); q.Limited() {
			qs = append(qs, quotaOf{user: true, key: user, label: label, q: q})
		}
	}
	return append(qs, pathQuotas(pol, name)...)
}

// over returns the error of a quota q, standing at u, that cannot take
// add more; with unknown, the bytes are not known yet, and the quota
// must only have room left.
func over(q quotaOf, u, add Usage, unknown bool) error {
	if l := q.q.Files; l > 0 && add.Files > 0 && u.Files+add.Files > l {
		return &largo.QuotaError{Quota: q.label, Limit: l, Used: u.Files, Files: true}
	}
	l := q.q.Bytes
	switch {
	case l <= 0:
		return nil
	case unknown && u.Bytes >= l, !unknown && add.Bytes > 0 && u.Bytes+add.Bytes > l:
		return &largo.QuotaError{Quota: q.label, Limit: l, Used: u.Bytes}
	}
	return nil
}

// claim is one write's hold on the quotas (ingest.Claim).
type claim struct {
	k        *Keeper
	pol      Policy
	name     string
	user     string
	size     int64 // announced, 0 when unknown
	old      int64 // the size of the file replaced
	oldETag  string
	replaces bool

	mu    sync.Mutex
	qs    []quotaOf
	back  []Usage
	held  int64 // bytes held against each of qs
	got   int64 // bytes received
	files int64 // files held against each of qs: 1, or 0 for bytes alone
	done  bool
}

// Grow implements ingest.Claim.
func (c *claim) Grow(n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.got+n <= c.held {
		c.got += n
		return nil
	}
	more := c.got + n - c.held
	k := c.k
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, q := range c.qs {
		// held counts in used already; the file replaced is given back.
		u := k.used(q.user, q.key)
		u.Bytes -= c.back[i].Bytes
		if l := q.q.Bytes; l > 0 && u.Bytes+more > l {
			return &largo.QuotaError{Quota: q.label, Limit: l, Used: u.Bytes}
		}
	}
	for _, q := range c.qs {
		k.hold(q, Usage{Bytes: more})
	}
	c.got += n
	c.held = c.got
	return nil
}

// Release implements ingest.Claim.
func (c *claim) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.release()
}

// release gives back what c holds. c.mu is held.
func (c *claim) release() {
	if c.done {
		return
	}
	c.done = true
	k := c.k
	k.mu.Lock()
	for _, q := range c.qs {
		k.hold(q, Usage{-c.held, -c.files})
	}
	k.mu.Unlock()
}

// Commit implements ingest.Claim: the file in, just committed at the
// claim's name, is counted for its paths and for its owner, whom its
// record names; the file it replaced stops counting for its own owner.
func (c *claim) Commit(ctx context.Context, in largo.Info, created bool, rec *record.File) {
	// The file is counted before its hold is given back, so that a write
	// admitted meanwhile never sees the room neither takes.
	defer func() {
		c.mu.Lock()
		c.release()
		c.mu.Unlock()
	}()
	k := c.k
	paths := Usage{in.Size, 1}
	if !created && c.replaces {
		paths = Usage{in.Size - c.old, 0}
	}
	k.count(c.pol, "", c.name, paths)
	if !created {
		o, err := k.ownerOf(ctx, c.name)
		if err == nil && o.User != "" && (o.ETag == c.oldETag || o.ETag == in.ETag) {
			k.count(nil, o.User, c.name, Usage{-o.Size, -1})
		}
	}
	if c.user != "" {
		k.count(nil, c.user, c.name, Usage{in.Size, 1})
	}
	if rec != nil {
		rec.Owner = c.user
	}
	if k.cfg.Files == nil && c.user != "" {
		k.markDirty() // no record says whose it is: a pass counts it
	}
}

// AdmitMove implements ingest.Quota: a rename brings files into every
// path with a quota at or below to that they were not under already,
// and is refused when one of them has no room for what it brings. Into
// a path that holds to, it brings all of from; into a path P below to,
// what lies at P's place below from (from and the rest of P's name below
// to), which the move lands under P. Its owners do not change. Only what
// lands under a quota is walked, to learn what it holds: a move with no
// quota at or below its destination walks nothing.
func (k *Keeper) AdmitMove(ctx context.Context, from, to string) error {
	pol := k.policy()
	if pol == nil {
		return nil
	}
	type landing struct {
		q   quotaOf
		src string // what lands under q, at its name before the move
	}
	var ls []landing
	for _, q := range pol.PathQuotas() {
		l := landing{q: quotaOf{key: q.Path, label: "/" + q.Path, q: q}, src: from}
		switch {
		case largo.Within(q.Path, to):
		case largo.Below(to, q.Path):
			l.src = from + q.Path[len(to):]
		default:
			continue // not where the move lands
		}
		if largo.Within(q.Path, l.src) {
			continue // under it already
		}
		ls = append(ls, l)
	}
	walked := map[string]Usage{}
	for _, l := range ls {
		add, ok := walked[l.src]
		if !ok {
			if err := k.walk(ctx, l.src, &add); err != nil {
				return err
			}
			walked[l.src] = add
		}
		k.mu.Lock()
		err := over(l.q, k.used(false, l.q.key), add, false)
		k.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
