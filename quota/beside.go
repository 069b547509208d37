package quota

import (
	"context"
	"errors"
	"strings"

	"largo"
)

// Besides files, two things a client makes through largo count against
// the quotas, each recorded in the state area under its name, with the
// user it counts for, so that a reconcile pass counts it again while its
// name is there, and a removal or a rename takes it along:
//
//   - what is kept beside a file or folder: WebDAV's dead properties,
//     whose record (package dav) takes bytes of the state area. They
//     count as bytes, and no file, for the user who last set them and for
//     the paths of their name (KeepBeside);
//   - a folder made (WebDAV's MKCOL, the page's new folder): one file,
//     and no bytes, for its maker and its paths (FolderMade). A folder
//     made on the way by a write, or behind largo's back, counts for
//     nothing.

// Where the records of each kind are, in the state area.
const (
	besidePrefix  = "quota/beside/"
	foldersPrefix = "quota/folders/"
)

// extra is the record of what one name counts besides its files.
type extra struct {
	Name  string `json:"name"`
	User  string `json:"user,omitempty"`
	Usage Usage  `json:"usage"`
}

func (e extra) named() string { return e.Name }

func (k *Keeper) getExtra(ctx context.Context, prefix, name string) (extra, error) {
	return getRecord[extra](ctx, k.cfg.State, prefix, name)
}

// putExtra writes e under prefix, or removes its record when it counts
// nothing.
func (k *Keeper) putExtra(ctx context.Context, prefix string, e extra) error {
	if e.Usage == (Usage{}) {
		return k.cfg.State.Delete(ctx, nameKey(prefix, e.Name))
	}
	return putRecord(ctx, k.cfg.State, prefix, e)
}

// countExtra adds e, times sign, to the counters of its user and paths.
func (k *Keeper) countExtra(pol Policy, e extra, sign int64) {
	u := Usage{e.Usage.Bytes * sign, e.Usage.Files * sign}
	k.count(pol, "", e.Name, u)
	if e.User != "" {
		k.count(nil, e.User, e.Name, u)
	}
}

// KeepBeside implements ingest.Quota: the bytes kept beside name are now
// size, and count for the user ctx's principal writes for and for the
// paths of name, in place of what counted beside it before (for whoever
// set it). It refuses, with a *largo.QuotaError, what the change adds to
// a quota with no room for it.
func (k *Keeper) KeepBeside(ctx context.Context, name string, size int64) error {
	pol := k.policy()
	user, label := k.owner(ctx)
	old, err := k.getExtra(ctx, besidePrefix, name)
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	k.mu.Lock()
	for _, q := range k.quotasOf(pol, user, label, name) {
		add := size
		if !q.user || q.key == old.User {
			add -= old.Usage.Bytes
		}
		if add <= 0 {
			continue
		}
		if err := over(q, k.used(q.user, q.key), Usage{Bytes: add}, false); err != nil {
			k.mu.Unlock()
			return err
		}
	}
	k.mu.Unlock()
	e := extra{Name: name, User: user, Usage: Usage{Bytes: size}}
	if err := k.putExtra(ctx, besidePrefix, e); err != nil {
		return err
	}
	k.countExtra(pol, old, -1)
	k.countExtra(pol, e, 1)
	return nil
}

// FolderMade implements ingest.Quota: the folder name, just made for
// ctx's principal, counts as one file for its user and its paths. Its
// admission is Admit's, of a file of no bytes.
func (k *Keeper) FolderMade(ctx context.Context, name string) {
	user, _ := k.owner(ctx)
	e := extra{Name: name, User: user, Usage: Usage{Files: 1}}
	if err := k.putExtra(ctx, foldersPrefix, e); err != nil {
		k.cfg.Logger.Warn("quota: recording a folder made", "name", name, "err", err)
		k.markDirty()
		return
	}
	k.countExtra(k.policy(), e, 1)
}

// Carried implements ingest.Quota: what counts beside from (a file or
// folder moved by copies to to) follows it.
func (k *Keeper) Carried(ctx context.Context, from, to string) {
	k.carry(ctx, besidePrefix, from, to)
	k.carry(ctx, foldersPrefix, from, to)
}

// carry moves the record of from under prefix to the name to, and its
// count from from's paths to to's.
func (k *Keeper) carry(ctx context.Context, prefix, from, to string) {
	e, err := k.getExtra(ctx, prefix, from)
	if err != nil {
		return
	}
	moved := e
	moved.Name = to
	if err := k.putExtra(ctx, prefix, moved); err != nil {
		k.cfg.Logger.Warn("quota: moving a record", "name", to, "err", err)
		k.markDirty()
		return
	}
	if err := k.cfg.State.Delete(ctx, nameKey(prefix, from)); err != nil {
		k.cfg.Logger.Warn("quota: moving a record", "name", from, "err", err)
	}
	pol := k.policy()
	k.count(pol, "", from, Usage{-e.Usage.Bytes, -e.Usage.Files})
	k.count(pol, "", to, e.Usage)
}

// forgetExtra drops the record of name under prefix, and what it counted.
func (k *Keeper) forgetExtra(ctx context.Context, prefix, name string) {
	e, err := k.getExtra(ctx, prefix, name)
	if err != nil {
		return
	}
	if err := k.cfg.State.Delete(ctx, nameKey(prefix, name)); err != nil {
		k.cfg.Logger.Warn("quota: removing a record", "name", name, "err", err)
		return
	}
	k.countExtra(k.policy(), e, -1)
}

// renameExtras carries the records of from, a folder, and of all below
// it to to: reading every record of each kind.
func (k *Keeper) renameExtras(ctx context.Context, from, to string) {
	for _, prefix := range []string{besidePrefix, foldersPrefix} {
		var names []string
		for r, err := range listRecords[extra](ctx, k.cfg.State, prefix) {
			if err != nil {
				k.markDirty()
				break
			}
			if r.v.Name != "" && largo.Within(from, r.v.Name) {
				names = append(names, r.v.Name)
			}
		}
		for _, n := range names {
			k.carry(ctx, prefix, n, to+strings.TrimPrefix(n, from))
		}
	}
}

// countExtras adds to truth what the records count whose names are
// there, and drops the others: a reconcile pass's.
func (k *Keeper) countExtras(ctx context.Context, truth tally, paths []string) error {
	for _, prefix := range []string{besidePrefix, foldersPrefix} {
		for r, err := range listRecords[extra](ctx, k.cfg.State, prefix) {
			if err != nil {
				return err
			}
			e := r.v
			in, err := k.cfg.Store.Stat(ctx, e.Name)
			switch {
			case e.Name != "" && err == nil && (prefix == besidePrefix || in.IsDir):
				if e.User != "" {
					truth.Users[e.User] = truth.Users[e.User].Add(e.Usage)
				}
				for _, p := range paths {
					if largo.Within(p, e.Name) {
						truth.Paths[p] = truth.Paths[p].Add(e.Usage)
					}
				}
				continue
			case e.Name != "" && err != nil && !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir):
				return err
			}
			if err := k.dropKey(ctx, r.key, r.version); err != nil {
				return err
			}
		}
	}
	return nil
}
