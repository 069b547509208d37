package quota

import (
	"context"
	"errors"
	"iter"
	"strings"

	"largo"
)

// owner is the record of who owns a file: the version (ETag) they wrote,
// and its size (records.go).
type owner struct {
	Name string `json:"name"`
	User string `json:"user,omitempty"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

func (o owner) named() string { return o.Name }

// ownersPrefix is where the owner records are, in the state area.
const ownersPrefix = "quota/owners/"

func ownerKey(name string) string { return nameKey(ownersPrefix, name) }

func getOwner(ctx context.Context, st largo.State, name string) (owner, error) {
	return getRecord[owner](ctx, st, ownersPrefix, name)
}

func putOwner(ctx context.Context, st largo.State, o owner) error {
	return putRecord(ctx, st, ownersPrefix, o)
}

// owners yields every owner record, with its version (listRecords), so
// that a record can be dropped only as it was read. A damaged record is
// yielded with its name empty.
func (k *Keeper) owners(ctx context.Context) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		for r, err := range listRecords[owner](ctx, k.cfg.State, ownersPrefix) {
			if !yield(record{owner: r.v, key: r.key, version: r.version}, err) {
				return
			}
		}
	}
}

// record is an owner record as read, with its key and version.
type record struct {
	owner
	key     string
	version string
}

// drop removes the record r, unless it changed since it was read.
func (k *Keeper) drop(ctx context.Context, r record) error {
	if sw, ok := k.cfg.State.(largo.StateSwapper); ok && r.version != "" {
		err := sw.DeleteIf(ctx, r.key, r.version)
		if errors.Is(err, largo.ErrPrecondition) {
			return nil // written again: it describes a newer file
		}
		if !errors.Is(err, largo.ErrUnsupported) {
			return err
		}
	}
	return k.cfg.State.Delete(ctx, r.key)
}

// Forget implements ingest.Quota: the file removed stops counting for
// its paths and its owner, and its record goes; what was kept beside it
// (its dead properties, gone with it) stops counting, and so does a
// folder made through largo. A folder removed, or a file that no record
// describes, is counted by the next reconcile pass (see MinPassGap). A
// name still there (a WebDAV copy that will replace the file) is left
// alone but for what was kept beside it.
func (k *Keeper) Forget(ctx context.Context, name string) {
	k.forgetExtra(ctx, besidePrefix, name)
	in, err := k.cfg.Store.Stat(ctx, name)
	switch {
	case err == nil && !in.IsDir:
		return // not removed: the write replacing it counts it
	case err == nil && in.IsDir:
		k.overlapsDirty(name) // a folder not removed after all
		return
	}
	k.forgetExtra(ctx, foldersPrefix, name)
	o, err := getOwner(ctx, k.cfg.State, name)
	if err == nil {
		k.count(k.policy(), "", name, Usage{-o.Size, -1})
		if o.User != "" {
			k.count(nil, o.User, name, Usage{-o.Size, -1})
		}
		if err := k.cfg.State.Delete(ctx, ownerKey(name)); err != nil {
			k.cfg.Logger.Warn("quota: removing a file's owner record", "name", name, "err", err)
		}
		return
	}
	// A folder, or a file largo never wrote: which, and what was below
	// it, is for the next pass to count, not for the removal to look for
	// among all the records.
	k.markDirty()
}

// Renamed implements ingest.Quota: a file's record follows it, and its
// paths count it where it went; a folder's records follow it, and its
// paths are counted again by a reconcile pass. What counts beside them
// follows them too.
func (k *Keeper) Renamed(ctx context.Context, from, to string) {
	in, err := k.cfg.Store.Stat(ctx, to)
	if err != nil {
		k.markDirty()
		return
	}
	if !in.IsDir {
		k.carry(ctx, besidePrefix, from, to)
		pol := k.policy()
		k.count(pol, "", from, Usage{-in.Size, -1})
		k.count(pol, "", to, Usage{in.Size, 1})
		if o, err := getOwner(ctx, k.cfg.State, from); err == nil {
			k.move(ctx, record{owner: o, key: ownerKey(from)}, to)
		}
		return
	}
	k.overlapsDirty(from)
	k.overlapsDirty(to)
	k.renameExtras(ctx, from, to)
	k.below(ctx, from, func(r record) {
		k.move(ctx, r, to+strings.TrimPrefix(r.Name, from))
	})
}

// move puts the record r under the name to, and drops it from its own.
func (k *Keeper) move(ctx context.Context, r record, to string) {
	o := r.owner
	o.Name = to
	if err := putOwner(ctx, k.cfg.State, o); err != nil {
		k.cfg.Logger.Warn("quota: moving a file's owner record", "name", to, "err", err)
		return
	}
	if err := k.cfg.State.Delete(ctx, r.key); err != nil {
		k.cfg.Logger.Warn("quota: moving a file's owner record", "name", r.Name, "err", err)
	}
}

// below calls fn with each owner record of a file below dir. It reads
// every record: a folder's removal or rename costs a pass over them.
func (k *Keeper) below(ctx context.Context, dir string, fn func(record)) {
	for r, err := range k.owners(ctx) {
		if err != nil {
			k.cfg.Logger.Warn("quota: reading the owner records", "err", err)
			k.markDirty()
			return
		}
		if r.Name != "" && largo.Below(dir, r.Name) {
			fn(r)
		}
	}
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
