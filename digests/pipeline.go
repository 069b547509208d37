package digests

import (
	"context"
	"errors"
	"strings"

	"largo"
)

// The methods of this file are what the write pipeline (package ingest)
// tells a Keeper. None returns an error: a write stands without its
// digest, and the failure goes to the log.

// Record keeps sum as the SHA-256 of the version in of the file name,
// just committed, and caches it, so that this process serves it at once
// whatever it believed before.
func (k *Keeper) Record(ctx context.Context, name string, in largo.Info, sum []byte) {
	if k == nil || k.state == nil || in.IsDir || in.ETag == "" || len(sum) == 0 {
		return
	}
	if err := Put(ctx, k.state, name, in.ETag, sum); err != nil {
		k.forget(name)
		k.log.Warn("recording a file's digest", "name", name, "err", err)
		return
	}
	k.keep(name, entry{etag: in.ETag, sum: sum, at: k.now()})
}

// Recorded returns the SHA-256 recorded for the version etag of the file
// name, or nil: what a copy of that version carries to its new name.
func (k *Keeper) Recorded(ctx context.Context, name, etag string) []byte {
	sum, err := k.Peek(ctx, name, etag)
	if err != nil {
		k.log.Warn("reading a file's digest", "name", name, "err", err)
	}
	return sum
}

// Forget drops the record of the file name, just removed or moved away,
// unless a file is there again with the version it describes (a write
// that committed meanwhile and recorded its own). A folder's name has no
// record; those of the files that were below it stay, harmless.
func (k *Keeper) Forget(ctx context.Context, name string) {
	if k == nil || k.state == nil {
		return
	}
	k.forget(name)
	rec, err := Get(ctx, k.state, name)
	if err != nil {
		return // none, or one that Lookup will not take either
	}
	if k.store != nil {
		if in, err := k.store.Stat(ctx, name); err == nil && in.ETag == rec.ETag {
			return
		}
	}
	if err := Delete(ctx, k.state, name); err != nil {
		k.log.Warn("removing a file's digest", "name", name, "err", err)
	}
}

// Renamed carries the records of from, a file or a folder with all below
// it, to to, where a rename just put it. A rename keeps a file's bytes,
// and on a folder its ETag too; a record moves only to a file with the
// ETag it was made for, so a store whose rename changed the version
// loses the digest rather than serve a wrong one.
func (k *Keeper) Renamed(ctx context.Context, from, to string) {
	if k == nil || k.state == nil || k.store == nil {
		return
	}
	// What is at to now was at from, name for name: to is a prefix of
	// every name the walk gives.
	largo.WalkDir(ctx, k.store, to, func(name string, in largo.Info, err error) error {
		if err == nil && !in.IsDir && !in.Link {
			k.carry(ctx, from+strings.TrimPrefix(name, to), name, in)
		}
		return nil
	})
}

// carry moves the record of from to to, now the file in.
func (k *Keeper) carry(ctx context.Context, from, to string, in largo.Info) {
	k.forget(from)
	k.forget(to)
	rec, err := Get(ctx, k.state, from)
	if errors.Is(err, largo.ErrNotFound) {
		k.Forget(ctx, to) // a record of an older file there goes
		return
	}
	if err == nil && rec.ETag == in.ETag {
		k.Record(ctx, to, in, rec.Sum())
	} else {
		k.Forget(ctx, to)
	}
	if err := Delete(ctx, k.state, from); err != nil {
		k.log.Warn("removing a file's digest", "name", from, "err", err)
	}
}
