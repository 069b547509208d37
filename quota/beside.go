package quota

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"largo"
	"largo/record"
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

// Where the records of each kind are, in the state area: each keyed by
// the SHA-256 of the name it describes (record.NameKey), a flat folder of
// fixed-length keys, whatever the names.
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

// getExtra reads the record of name in t; one that does not describe
// name is damaged, an error wrapping largo.ErrNotFound.
func getExtra(ctx context.Context, t *record.Table[extra], name string) (extra, error) {
	e, err := t.Get(ctx, record.NameKey(name))
	if err == nil && e.Name != name {
		return extra{}, fmt.Errorf("quota record of %s: damaged: %w", name, largo.ErrNotFound)
	}
	return e, err
}

// putExtra writes e in t, or removes its record when it counts nothing.
func putExtra(ctx context.Context, t *record.Table[extra], e extra) error {
	if e.Usage == (Usage{}) {
		return t.Delete(ctx, record.NameKey(e.Name))
	}
	return t.Put(ctx, record.NameKey(e.Name), e)
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
	old, err := getExtra(ctx, k.beside, name)
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
	if err := putExtra(ctx, k.beside, e); err != nil {
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
	if err := putExtra(ctx, k.folders, e); err != nil {
		k.cfg.Logger.Warn("quota: recording a folder made", "name", name, "err", err)
		k.markDirty()
		return
	}
	k.countExtra(k.policy(), e, 1)
}

// Carried implements ingest.Quota: what counts beside from (a file or
// folder moved by copies to to) follows it.
func (k *Keeper) Carried(ctx context.Context, from, to string) {
	k.carry(ctx, k.beside, from, to)
	k.carry(ctx, k.folders, from, to)
}

// carry moves the record of from in t to the name to, and its count from
// from's paths to to's.
func (k *Keeper) carry(ctx context.Context, t *record.Table[extra], from, to string) {
	e, err := getExtra(ctx, t, from)
	if err != nil {
		return
	}
	moved := e
	moved.Name = to
	if err := putExtra(ctx, t, moved); err != nil {
		k.cfg.Logger.Warn("quota: moving a record", "name", to, "err", err)
		k.markDirty()
		return
	}
	if err := t.Delete(ctx, record.NameKey(from)); err != nil {
		k.cfg.Logger.Warn("quota: moving a record", "name", from, "err", err)
	}
	pol := k.policy()
	k.count(pol, "", from, Usage{-e.Usage.Bytes, -e.Usage.Files})
	k.count(pol, "", to, e.Usage)
}

// forgetExtra drops the record of name in t, and what it counted.
func (k *Keeper) forgetExtra(ctx context.Context, t *record.Table[extra], name string) {
	e, err := getExtra(ctx, t, name)
	if err != nil {
		return
	}
	if err := t.Delete(ctx, record.NameKey(name)); err != nil {
		k.cfg.Logger.Warn("quota: removing a record", "name", name, "err", err)
		return
	}
	k.countExtra(k.policy(), e, -1)
}

// renameExtras carries the records of from, a folder, and of all below
// it to to: reading every record of each kind.
func (k *Keeper) renameExtras(ctx context.Context, from, to string) {
	for _, t := range []*record.Table[extra]{k.beside, k.folders} {
		var names []string
		for e, err := range t.All(ctx) {
			if err != nil {
				k.markDirty()
				continue
			}
			if n := e.Value.Name; n != "" && largo.Within(from, n) {
				names = append(names, n)
			}
		}
		for _, n := range names {
			k.carry(ctx, t, n, to+strings.TrimPrefix(n, from))
		}
	}
}

// countExtras adds to truth what the records count whose names are
// there, and drops the others (each only as it was read): a reconcile
// pass's.
func (k *Keeper) countExtras(ctx context.Context, truth tally, paths []string) error {
	for _, t := range []*record.Table[extra]{k.beside, k.folders} {
		var failed error
		_, err := t.Sweep(ctx, func(ctx context.Context, r record.Entry[extra]) bool {
			e := r.Value
			if failed != nil {
				return false
			}
			if e.Name == "" || record.NameKey(e.Name) != r.Key {
				return true // it describes no name
			}
			in, err := k.cfg.Store.Stat(ctx, e.Name)
			switch {
			case err == nil && (t == k.beside || in.IsDir):
				if e.User != "" {
					truth.Users[e.User] = truth.Users[e.User].Add(e.Usage)
				}
				for _, p := range paths {
					if largo.Within(p, e.Name) {
						truth.Paths[p] = truth.Paths[p].Add(e.Usage)
					}
				}
				return false
			case err != nil && !errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrNotDir):
				failed = err
				return false
			}
			return true // its name is gone, or no folder now
		})
		if err == nil {
			err = failed
		}
		if err != nil {
			return err
		}
	}
	return nil
}
