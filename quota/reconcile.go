package quota

import (
	"context"
	"errors"
	"slices"
	"strings"

	"largo"
	"largo/auth"
	"largo/record"
)

// Reconcile counts everything again from the truth, and records it: the
// files under each path with a quota, walked in the store, and each
// user's files, from the owner records that still match their files
// (those that do not are dropped), and what counts besides files
// (beside.go), from the records whose names are still there. This
// instance's changes are synced
// first; a write that commits while the pass walks may be counted twice,
// or not at all, until the next pass.
func (k *Keeper) Reconcile(ctx context.Context) ([]Line, error) {
	k.mu.Lock()
	k.dirty = false
	k.mu.Unlock()
	if err := k.Sync(ctx); err != nil {
		return nil, err
	}
	truth := newTally()
	paths := k.paths()
	walked := k.cfg.Now()
	for _, p := range paths {
		var u Usage
		if err := k.walk(ctx, p, &u); err != nil {
			k.markDirty()
			return nil, err
		}
		truth.Paths[p] = u
	}
	if f := k.cfg.Files; f != nil {
		var statErr error
		_, err := f.Sweep(ctx, func(ctx context.Context, r record.File) bool {
			in, err := k.cfg.Store.Stat(ctx, r.Name)
			switch {
			case err == nil && !in.IsDir && in.ETag == r.ETag:
				if r.Owner != "" {
					truth.Users[r.Owner] = truth.Users[r.Owner].Add(Usage{in.Size, 1})
				}
				return false
			case err != nil && !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir):
				statErr = err
				return false
			}
			// Its file is gone, or another now: the record describes
			// nothing.
			return true
		})
		if err == nil {
			err = statErr
		}
		if err != nil {
			k.markDirty()
			return nil, err
		}
	}
	if err := k.countExtras(ctx, truth, paths); err != nil {
		k.markDirty()
		return nil, err
	}
	now := k.cfg.Now()
	rec, err := k.update(ctx, func(r *usageRecord) bool {
		if r.Walked.After(walked) {
			return false // a later pass (another instance's) is recorded
		}
		r.tally, r.Reconciled, r.Walked, r.Counted = truth, now, walked, paths
		return true
	})
	if err != nil {
		k.markDirty()
		return nil, err
	}
	k.mu.Lock()
	k.adoptLocked(rec)
	// This instance's changes made before the walk are in the count.
	k.pending = newTally()
	kept := k.log[:0]
	for _, c := range k.log {
		if c.at.After(rec.Walked) {
			k.pending.merge(c.t)
			kept = append(kept, c)
		}
	}
	k.log = kept
	k.mu.Unlock()
	return k.Report(), nil
}

// walk adds to u the files in the store at or below name. A link holds
// no bytes: what it leads to is counted where it is.
func (k *Keeper) walk(ctx context.Context, name string, u *Usage) error {
	return largo.WalkDir(ctx, k.cfg.Store, name, func(_ string, in largo.Info, err error) error {
		switch {
		case errors.Is(err, largo.ErrNotFound) || errors.Is(err, largo.ErrNotDir):
			return nil // nothing there
		case err != nil:
			return err
		case !in.IsDir && !in.Link:
			*u = u.Add(Usage{in.Size, 1})
		}
		return nil
	})
}

// Line is the usage of one user or path, beside its quota.
type Line struct {
	// Path is the path's name ("" for all the files), for a path.
	Path string `json:"path,omitempty"`
	// User is the user's name, for a user.
	User string `json:"user,omitempty"`
	// Used is what the files take, as counted.
	Used Usage `json:"used"`
	// Held is what writes in flight hold, on this instance.
	Held Usage `json:"held"`
	// Limit is the quota; zero fields mean no limit.
	Limit Usage `json:"limit"`
}

// Name returns how the line names its user or path: "user NAME" or
// "/PATH".
func (l Line) Name() string {
	if l.User != "" {
		return "user " + l.User
	}
	return "/" + l.Path
}

// Report returns the usage of every path with a quota, and of every user
// who owns files or has a quota of their own (when the policy lists them:
// QuotaUsers), sorted: paths first.
func (k *Keeper) Report() []Line {
	pol := k.policy()
	var pq []auth.Quota
	var listed []string
	if pol != nil {
		pq = pol.PathQuotas()
		if l, ok := pol.(interface{ QuotaUsers() []string }); ok {
			listed = l.QuotaUsers()
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Line
	for _, q := range pq {
		out = append(out, Line{
			Path:  q.Path,
			Used:  k.base.Paths[q.Path].Add(k.syncing.Paths[q.Path]).Add(k.pending.Paths[q.Path]),
			Held:  k.held.Paths[q.Path],
			Limit: Usage{q.Bytes, q.Files},
		})
	}
	users := map[string]bool{}
	for _, u := range listed {
		users[u] = true
	}
	for _, t := range []tally{k.base, k.syncing, k.pending, k.held} {
		for u := range t.Users {
			users[u] = true
		}
	}
	var names []string
	for u := range users {
		names = append(names, u)
	}
	slices.Sort(names)
	for _, u := range names {
		q := k.userQuota(pol, u)
		out = append(out, Line{
			User:  u,
			Used:  k.base.Users[u].Add(k.syncing.Users[u]).Add(k.pending.Users[u]),
			Held:  k.held.Users[u],
			Limit: Usage{q.Bytes, q.Files},
		})
	}
	slices.SortStableFunc(out[:len(pq)], func(a, b Line) int { return strings.Compare(a.Path, b.Path) })
	return out
}
