package quota

import (
	"context"
	"fmt"

	"largo"
)

// owner is what a file's record (record.File) tells the quotas: whom
// the version it describes counts for, and its size.
type owner struct {
	Name string
	User string
	Size int64
	ETag string
}

// ownerOf returns the owner of the file name, from its record; an error
// wrapping largo.ErrNotFound when it has none (or no records are kept).
func (k *Keeper) ownerOf(ctx context.Context, name string) (owner, error) {
	if k.cfg.Files == nil {
		return owner{}, fmt.Errorf("owner of %s: no records: %w", name, largo.ErrNotFound)
	}
	rec, err := k.cfg.Files.Get(ctx, name)
	if err != nil {
		return owner{}, err
	}
	return owner{Name: rec.Name, User: rec.Owner, Size: rec.Size, ETag: rec.ETag}, nil
}

// Forget implements ingest.Quota: the file removed stops counting for
// its paths and its owner, and its record goes; what was kept beside it
// (its dead properties, gone with it) stops counting, and so does a
// folder made through largo. A folder removed, or a file that no record
// describes, is counted by the next reconcile pass (see MinPassGap). A
// name still there (a WebDAV copy that will replace the file) is left
// alone but for what was kept beside it.
func (k *Keeper) Forget(ctx context.Context, name string) {
	k.forgetExtra(ctx, k.beside, name)
	in, err := k.cfg.Store.Stat(ctx, name)
	switch {
	case err == nil && !in.IsDir:
		return // not removed: the write replacing it counts it
	case err == nil && in.IsDir:
		k.overlapsDirty(name) // a folder not removed after all
		return
	}
	k.forgetExtra(ctx, k.folders, name)
	o, err := k.ownerOf(ctx, name)
	if err == nil {
		k.count(k.policy(), "", name, Usage{-o.Size, -1})
		if o.User != "" {
			k.count(nil, o.User, name, Usage{-o.Size, -1})
		}
		return // the pipeline drops the record
	}
	// A folder, or a file largo never wrote: which, and what was below
	// it, is for the next pass to count, not for the removal to look for
	// among all the records.
	k.markDirty()
}

// Renamed implements ingest.Quota: a file's paths count it where it
// went (its record, which says its owner, follows it: the pipeline moves
// it); a folder's paths are counted again by a reconcile pass. What
// counts beside them follows them too.
func (k *Keeper) Renamed(ctx context.Context, from, to string) {
	in, err := k.cfg.Store.Stat(ctx, to)
	if err != nil {
		k.markDirty()
		return
	}
	if !in.IsDir {
		k.carry(ctx, k.beside, from, to)
		pol := k.policy()
		k.count(pol, "", from, Usage{-in.Size, -1})
		k.count(pol, "", to, Usage{in.Size, 1})
		return
	}
	k.overlapsDirty(from)
	k.overlapsDirty(to)
	k.renameExtras(ctx, from, to)
}

// overlapsDirty asks for a reconcile pass when a path with a quota is
// within name or holds it: a change there that the records do not
// describe.
func (k *Keeper) overlapsDirty(name string) {
	for _, p := range k.paths() {
		if largo.Within(p, name) || largo.Within(name, p) {
			k.markDirty()
			return
		}
	}
}
