package largo

import (
	"context"
	"errors"
	"io/fs"
)

// SkipDir, returned by a WalkDirFunc called for a folder, skips that
// folder; returned for anything else, it skips the rest of the folder
// that holds it. It is fs.SkipDir, so either may be returned.
var SkipDir = fs.SkipDir

// SkipAll, returned by a WalkDirFunc, ends the walk, and WalkDir returns
// nil. It is fs.SkipAll.
var SkipAll = fs.SkipAll

// WalkDirFunc is the function WalkDir calls for each name it walks, with
// what the store says of it (in) and, when the name could not be looked
// at or listed, the error (err). What it returns decides what the walk
// does next (see WalkDir).
type WalkDirFunc func(name string, in Info, err error) error

// WalkDir walks the tree at root in st as fs.WalkDir walks a file
// system: it calls fn for root and for everything below it, depth first,
// a folder before its entries, each folder's entries in the order st
// lists them (a store that lists in order, such as one made by package
// listing's Sorted, makes the walk's order deterministic).
//
// What fn returns decides: nil goes on; SkipDir skips the folder fn was
// called for or, called for anything else, the rest of its folder;
// SkipAll ends the walk, and WalkDir returns nil; any other error ends
// the walk, and WalkDir returns it.
//
// fn is called with an error in two cases: for root, when st cannot look
// at it (in is then zero), and a second time for a folder whose listing
// failed (what was listed before the failure has been walked). Returning
// nil or SkipDir then goes on with the rest of the tree. A folder gone,
// or no longer a folder, by the time it is listed is walked as empty:
// that is no failure of the walk.
//
// Every walk follows the same rules:
//   - Symbolic links are never entered. A link is passed to fn with Link
//     set, so that fn may choose what to do with it: a store that follows
//     no link (package disk) tells nothing else about it, while the
//     access gate tells what it leads to, where it may be followed, or
//     leaves it out. A linked folder is not descended into, for it could
//     lead back up: what a link leads to is walked where it is. Root is
//     walked as st's Stat sees it (through the gate, where a link there
//     leads).
//   - Names that are never served (Reserved: hidden names, the state
//     area, names under the reserved prefix) are passed over, whatever st
//     lists.
//   - When ctx is done the walk ends, and WalkDir returns ctx's error.
//
// Each folder's listing is ranged over once, while its entries are
// walked, and ends before the walk goes on with the next entry of the
// folder above: a store may keep what it needs of a folder in its List
// for as long as the folder's entries are walked. A walk holds one
// listing open for each level of the tree it is in.
//
// It is the one walk of a tree: the server's own housekeeping (expiry,
// quotas, digests, sidecars' records) walks the raw store, and what a
// requester asks for (a search, an archive, a SHA256SUMS, a move by
// copies) walks the gate's store with the requester's principal.
func WalkDir(ctx context.Context, st Store, root string, fn WalkDirFunc) error {
	in, err := st.Stat(ctx, root)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		err = fn(root, Info{}, err)
	} else {
		err = walkDir(ctx, st, root, in, fn)
	}
	if err == SkipDir || err == SkipAll {
		return nil
	}
	return err
}

// walkDir walks name, whose Info is in, and what is below it.
func walkDir(ctx context.Context, st Store, name string, in Info, fn WalkDirFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fn(name, in, nil); err != nil || !in.IsDir || in.Link {
		if err == SkipDir && in.IsDir {
			err = nil
		}
		return err
	}
	for e, err := range st.List(ctx, name) {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDir) {
				return nil // gone meanwhile: walked as empty
			}
			if err := fn(name, in, err); err != SkipDir {
				return err
			}
			return nil
		}
		child := Join(name, e.Name)
		if Reserved(child) {
			continue
		}
		if err := walkDir(ctx, st, child, e, fn); err != nil {
			if err == SkipDir {
				return nil // the rest of this folder skipped
			}
			return err
		}
	}
	return nil
}
