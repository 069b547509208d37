package largo

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The write side of a Store is a set of optional capabilities: a store that
// cannot write simply lacks them, and the HTTP layer answers writes with 405
// or 501. None of them assumes a local path or an operating-system file, so
// an object store implements them as well as a folder does.

// CreateOptions governs a new upload.
type CreateOptions struct {
	// Size is the length the client announced, or -1 when it is unknown
	// (a chunked body). A store may use it to reserve space or to choose
	// how to send the bytes on; it never trusts it for the final size.
	Size int64
	// NoMkdir refuses the upload, with an error wrapping ErrNotFound, when
	// the target's folder does not exist, instead of creating the missing
	// folders at commit.
	NoMkdir bool
	// Known, when not nil, is what the caller found at the target a
	// moment before, when it admitted the write: the zero Info for
	// nothing there; a file there means its folder is there too. A store
	// may take it instead of looking again (an object store's requests),
	// and for whether the commit creates the file; the condition is
	// still what makes the commit safe against writers in between.
	Known *Info
	// Condition is the condition the caller will pass to Commit, stated
	// at creation. A store that sends the bytes on while they arrive (an
	// object store's single PUT, which carries its condition in its
	// headers) needs it before the first byte; such a store refuses, with
	// ErrUnsupported, a Commit under another condition, and refuses at
	// Create a condition it cannot apply atomically. Stores that decide at
	// Commit ignore it.
	Condition Condition
}

// Condition is what must hold of the target when an upload is committed or
// a file removed: the If-None-Match and If-Match of HTTP. The zero value
// always holds.
type Condition struct {
	// IfNoneMatch set: the target must not exist (If-None-Match: *).
	IfNoneMatch bool
	// IfMatch, when not empty, is the ETag (quotes included) the target
	// must have; "*" means any existing file.
	IfMatch string
}

// Upload is a write in progress. Its bytes are invisible to readers until
// Commit, which makes the whole of them appear at the target name at once;
// Abort (or a failed Commit) leaves the target as it was. An Upload is used
// by one goroutine at a time. It only stores: counting, hashing and every
// check of what is written are the write pipeline's (package ingest), the
// same for every store.
type Upload interface {
	// Write appends p. An error wrapping ErrNoSpace means the store is
	// full; the upload must then be aborted.
	io.Writer
	// Commit makes the upload visible at its name if cond holds of the
	// target at that moment, replacing any file there. Concurrent commits to
	// one name are serialised: each result is one whole upload, and the last
	// commit wins. created reports whether no file existed before. A failed
	// condition returns an error wrapping ErrPrecondition; after any error
	// the upload is gone, as after Abort.
	Commit(ctx context.Context, cond Condition) (in Info, created bool, err error)
	// Abort discards the upload. It is safe to call after Commit, when it
	// does nothing.
	Abort() error
}

// Creator is a store that accepts new files.
type Creator interface {
	// Create starts an upload to name. Errors known before any byte is sent
	// (an invalid name, a folder at the target, a missing folder under
	// NoMkdir) are returned here.
	Create(ctx context.Context, name string, opt CreateOptions) (Upload, error)
}

// Adopter is a store that can take a file already staged inside its own
// state (a finished resumable upload) as an Upload, without copying its
// bytes. staged is a name under StateDir. The Upload it returns takes no
// more bytes: only Commit and Abort.
type Adopter interface {
	Adopt(ctx context.Context, name, staged string, opt CreateOptions) (Upload, error)
}

// RemoveOptions governs a removal.
type RemoveOptions struct {
	// Recursive removes a folder with everything in it; without it only an
	// empty folder is removed (ErrNotEmpty otherwise).
	Recursive bool
	// Condition must hold of a file being removed.
	Condition Condition
}

// Remover is a store that removes files and folders.
type Remover interface {
	// Remove removes name. The root folder cannot be removed
	// (ErrPermission).
	Remove(ctx context.Context, name string, opt RemoveOptions) error
}

// SpaceReporter is a store that knows how much room is left for the file
// name: the free space of the filesystem or the quota that holds it.
type SpaceReporter interface {
	// Free returns the bytes that can still be written under name.
	Free(ctx context.Context, name string) (int64, error)
}

// Check reports, with an error wrapping ErrPrecondition, whether c fails
// for a target whose current state is in (exists false: no file there).
// A folder never matches an ETag.
func (c Condition) Check(name string, in Info, exists bool) error {
	if c.IfNoneMatch && exists {
		return fmt.Errorf("%s exists: %w", name, ErrPrecondition)
	}
	if c.IfMatch == "" {
		return nil
	}
	if !exists || in.IsDir {
		return fmt.Errorf("%s: no file to match: %w", name, ErrPrecondition)
	}
	if c.IfMatch != "*" && c.IfMatch != in.ETag {
		return fmt.Errorf("%s has changed: %w", name, ErrPrecondition)
	}
	return nil
}

// DirMaker is a store that makes empty folders (WebDAV's MKCOL). A store
// without it makes folders only as the parents of files it writes.
type DirMaker interface {
	// MakeDir makes the folder name, whose parent must be a folder: an
	// error wrapping ErrNotFound when the parent is missing, ErrNotDir
	// when it is a file, ErrExist when anything is at name already.
	MakeDir(ctx context.Context, name string) error
}

// Renamer is a store that moves a file or a folder to a new name in one
// step (WebDAV's MOVE). A store without it moves by copy then remove.
type Renamer interface {
	// Rename moves from to to, replacing a file at to (never a folder:
	// ErrIsDir). The parent of to must exist (ErrNotFound otherwise).
	// Readers see from or to, never a part of either.
	Rename(ctx context.Context, from, to string) error
}

// Copier is a store that copies a file inside itself without its bytes
// passing through the caller (WebDAV's COPY): on a folder an in-kernel
// copy (copy_file_range, a reflink where the filesystem shares blocks)
// into a temporary file, on a bucket a server-side copy.
type Copier interface {
	// Copy starts a copy of the file src to name as an Upload that takes
	// no bytes: Commit makes the copy appear at name, as a write would,
	// and Abort discards it. src stays as it is.
	Copy(ctx context.Context, name, src string, opt CreateOptions) (Upload, error)
}

// AssemblyAdopter is a store that assembles a file at its own name from
// parts placed while the file's pieces arrive (on a bucket, a multipart
// upload begun at the file's key, whose parts the staging of parallel
// resumable uploads copies in as each piece ends), so that finishing the
// file is one call whatever its size, never a copy of the whole.
type AssemblyAdopter interface {
	// AdoptAssembly returns, as an Upload that takes no more bytes, the
	// assembly id of the file name, which holds opt.Size bytes: Commit
	// completes it under the condition; Abort leaves it to whoever began
	// it, who may adopt it again or discard it.
	AdoptAssembly(ctx context.Context, name, id string, opt CreateOptions) (Upload, error)
}

// CheckParent checks, for a change that makes no folders on the way (a
// new folder, a move, WebDAV's MKCOL, COPY and MOVE), that the folder
// name would be made in exists in s and is a folder: ErrMissingFolder
// (wrapping the store's error) or ErrParentNotDir otherwise. The root's
// entries always have theirs.
func CheckParent(ctx context.Context, s Store, name string) error {
	dir := Parent(name)
	if dir == "" {
		return nil
	}
	in, err := s.Stat(ctx, dir)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%s: %w: %w", dir, ErrMissingFolder, err)
	case errors.Is(err, ErrNotDir) || err == nil && !in.IsDir:
		return fmt.Errorf("%s: %w", dir, ErrParentNotDir)
	}
	return err
}
