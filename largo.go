// Package largo holds the vocabulary shared by every part of the server: what a
// stored file is (Info), how files are reached (the Store interface and its
// optional capabilities), which names are valid (ParseName), and the few kinds
// of error a store may return (ErrNotFound and friends).
//
// It imports only the standard library and knows nothing of HTTP: stores
// (package disk, package s3) implement it, and the HTTP surface (package serve)
// consumes it, so nothing above a store ever assumes a local path.
package largo

import (
	"context"
	"io"
	"iter"
	"os"
	"time"
)

// Info describes one stored file or folder.
type Info struct {
	// Name is the last element of the file's name ("" for the root folder).
	Name string
	// Size is the length in bytes; zero for folders.
	Size int64
	// ModTime is the time of the last modification.
	ModTime time.Time
	// IsDir reports whether the entry is a folder.
	IsDir bool
	// Link reports, in listings, that the entry is a symbolic link. A
	// store that follows no link (a Resolver) yields it with nothing else
	// known; the access gate lists it with the metadata of what it leads
	// to, where it may be followed, or leaves it out. Walkers do not
	// descend into linked folders, which could form cycles.
	Link bool
	// ETag is a strong validator in HTTP form, quotes included, that changes
	// whenever the content may have changed. Empty for folders.
	ETag string
	// ContentType is the media type a store knows for the file, or "" when
	// the server should derive one from the name and the content.
	ContentType string
}

// File is an open stored file: a seekable body and the metadata captured
// when it was opened. A File is not safe for concurrent use.
type File interface {
	io.ReadSeekCloser
	// Info returns the metadata of the opened version of the file.
	Info() Info
}

// Store is where files live. Names are slash-separated and relative, as
// returned by ParseName; "" is the root folder. Implementations must be safe
// for concurrent use.
type Store interface {
	// Stat returns the metadata of name without opening it.
	Stat(ctx context.Context, name string) (Info, error)
	// Open opens the file name for reading. If name is a folder it returns
	// an error wrapping ErrIsDir.
	Open(ctx context.Context, name string) (File, error)
	// List yields the entries of the folder name, in no particular order.
	// Hidden entries (see Hidden) are never yielded. A failure ends the
	// sequence with a non-nil error.
	List(ctx context.Context, name string) iter.Seq2[Info, error]
}

// OSFile is implemented by files backed by an operating-system file. The
// transfer layer hands such files to the kernel (sendfile), so their bytes
// never pass through user space.
type OSFile interface {
	OSFile() *os.File
}

// SliceFile is implemented by files whose bytes lie in operating-system
// files a slice at a time (a bucket's object whose slices are kept on the
// local disk): the transfer layer hands each slice to the kernel
// (sendfile) as it would an OSFile.
type SliceFile interface {
	File
	// Slice returns the operating-system file that holds the byte at the
	// file's offset and those after it up to the slice's end, positioned
	// at that byte. It belongs to the file: the caller neither closes it
	// nor keeps it past the file's next call. Reading it or sending from
	// it moves the file's offset alike, and a send that stops at the
	// slice's end goes on from the next Slice. At the file's end, or when
	// the bytes cannot be had, it returns an error, and Read then says
	// what there is to say. Seek(0, io.SeekCurrent) may be called from
	// another goroutine while a send from the slice runs, and tells how
	// far it got.
	Slice() (*os.File, error)
}

// Presigner is a store that can hand out a URL from which a file may be
// read for a while without the server (a bucket's presigned URL): what
// the holder of the URL reads passes none of the server's caps, counts or
// logs.
type Presigner interface {
	// Presign returns a URL that reads the file name until ttl has
	// passed.
	Presign(ctx context.Context, name string, ttl time.Duration) (string, error)
}

// Resolver is a store in which one name may reach a file that lives under
// another (a folder's symbolic links). Such a store follows no link when
// it acts: it is asked for the name a file really has (its physical
// name), which the access gate learns here and judges, and fails with
// ErrSymlink when a link stands on the way, so that what was judged is
// what is done.
type Resolver interface {
	// Resolve returns the physical name that name reaches, as the kernel
	// resolves it: each link met is replaced by its target's elements,
	// read relative to the link's folder, and a ".." among them steps
	// back from where the link led (pub/x -> d/../s, with pub/d ->
	// ../private/inner, reaches private/s), never past the root. It also
	// returns the links met on the way, in order. A name that meets no
	// link resolves to itself with no hops. A missing element ends the
	// resolution: it and what follows are kept as spelled (the name a
	// write would create). A link that leads out of the store (an
	// absolute target, or ".." past the root), into a missing element
	// followed by "..", or round in a loop (more than 40 links) is an
	// error wrapping ErrNotFound.
	Resolve(ctx context.Context, name string) (string, []Hop, error)
}

// Hop is one symbolic link met while resolving a name.
type Hop struct {
	// Link is the link's own physical name.
	Link string
	// Target is the physical name it leads to, its own target's links
	// followed (which are hops of their own, listed before it).
	Target string
}
