//go:build unix

// Package disk implements largo.Store on a local folder of a unix system.
//
// The store acts on physical names: those largo.Resolver (Resolve)
// returns, which the access gate judges. It follows no symbolic link:
// every name is opened beneath the folder's descriptor with no link
// allowed on the way or at its end (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS on Linux; element by element with O_NOFOLLOW where
// there is no openat2), so a call reaches exactly the file whose name was
// judged, and a link made since the judgement fails the call with
// largo.ErrSymlink instead of leading it elsewhere. ".." never appears in
// a name (largo.ParseName), and nothing outside the folder is reachable.
// Listings yield a link as an entry marked Link with nothing else known
// of it: where it leads is the resolver's to tell. ETags are strong: they
// change with the inode, the size or the modification time.
//
// A Store is safe for concurrent use. Files it opens are backed by *os.File
// and implement largo.OSFile, so downloads keep sendfile.
//
// Writes (write.go) stream into a temporary file in TempDir, inside the
// served folder and so on the same filesystem, hashed with SHA-256 on the
// way. A write holds, from its creation, the folder it will land in (an
// open descriptor of the deepest folder of its name that exists): its
// commit checks that this folder is still the one at its name, makes the
// missing folders below it without following a link, fsyncs the file,
// renames it into the held folder and fsyncs the folder, so a reader sees
// the old file or the whole new one, and a folder moved or replaced by a
// link while the bytes arrived fails the commit (largo.ErrChanged) with
// nothing placed. Commits and removals of one name are serialised by a
// per-name lock inside the process; conditions are checked under it.
// Sweep removes the temporary files a crash left.
//
// State records (state.go) are files under .largo, written whole the same
// way; one is created only where none is by a link into place, and
// replaced or removed only as it was read (largo.StateSwapper) under the
// store's mutex and a flock of .largo/swap.lock, which every process
// serving the folder takes.
package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"largo"
	"largo/internal/keylock"
)

// Store is a largo.Store on a local folder. Create one with Open.
type Store struct {
	dir   string
	dirF  *os.File // dir, whose descriptor every name is opened beneath
	dirFd int
	// noOpenat2 is set once the kernel refused openat2.
	noOpenat2 atomic.Bool
	root      *os.Root    // the state area's way in
	locks     keylock.Set // by name: commits and removals

	swapMu sync.Mutex // the state area's swaps, in this process

	stateOnce sync.Once // the state area made the server's alone
	stateErr  error
}

var _ largo.Store = (*Store)(nil)

// Open returns a Store on the folder dir, which must exist and be readable.
func Open(dir string) (*Store, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	// A folder we may open but not list is as good as missing.
	if _, err := d.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
		d.Close()
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Store{dir: dir, root: root, dirF: d, dirFd: int(d.Fd())}, nil
}

// Close releases the folder. Files already open stay usable.
func (s *Store) Close() error {
	s.dirF.Close()
	return s.root.Close()
}

// Dir returns the folder the store was opened on.
func (s *Store) Dir() string { return s.dir }

// Root returns the os.Root of the folder, for packages that keep their
// own state inside the served folder's state area (uploads).
func (s *Store) Root() *os.Root { return s.root }

// Stat implements largo.Store.
func (s *Store) Stat(_ context.Context, name string) (largo.Info, error) {
	st, err := s.stat(name)
	if err != nil {
		return largo.Info{}, err
	}
	return infoStat(name, st), nil
}

// Open implements largo.Store. Only regular files open: devices, pipes
// and sockets could block a reader for ever.
func (s *Store) Open(_ context.Context, name string) (largo.File, error) {
	fd, err := s.beneath(name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		closeFd(fd)
		return nil, atErr(name, err)
	}
	switch {
	case isDir(&st):
		closeFd(fd)
		return nil, fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	case !isReg(&st):
		closeFd(fd)
		return nil, fmt.Errorf("%s: not a regular file: %w", name, largo.ErrNotFound)
	}
	f := os.NewFile(uintptr(fd), name)
	blocking(f)
	return &file{File: f, info: infoStat(name, &st)}, nil
}

// List implements largo.Store. A symbolic link is yielded as an entry
// with Link set and nothing else known (where it leads is Resolve's to
// tell); left out are hidden entries, names no request could name (a
// backslash, a control byte: what largo.ParseName refuses, and what an
// archive must never hold) and anything that is neither a regular file,
// a folder nor a link.
func (s *Store) List(_ context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		fd, err := s.beneath(name, dirFlags)
		if errors.Is(err, largo.ErrNotFound) && !errors.Is(err, largo.ErrSymlink) {
			if st, serr := s.stat(name); serr == nil && !isDir(st) {
				err = fmt.Errorf("%s: %w", name, largo.ErrNotDir)
			}
		}
		if err != nil {
			yield(largo.Info{}, err)
			return
		}
		d := os.NewFile(uintptr(fd), name)
		defer d.Close()
		for {
			// Names only: a folder's entries are looked at relative to
			// its descriptor, never by a path.
			names, err := d.Readdirnames(256)
			for _, elem := range names {
				if strings.HasPrefix(elem, ".") || !validElem(elem) {
					continue
				}
				child := largo.Join(name, elem)
				st, serr := statIn(fd, elem)
				switch {
				case serr != nil || st == nil:
					continue // vanished meanwhile
				case isLink(st):
					if !yield(largo.Info{Name: elem, Link: true}, nil) {
						return
					}
					continue
				case !isDir(st) && !isReg(st):
					continue // a device, a pipe, a socket
				}
				if !yield(infoStat(child, st), nil) {
					return
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
				return
			}
			if err != nil {
				yield(largo.Info{}, mapErr(err))
				return
			}
		}
	}
}

// validElem reports whether a folder entry's name can be a name's element.
func validElem(elem string) bool {
	name, err := largo.ParseName("/" + elem)
	return err == nil && name == elem
}

// file is an open file of the store.
type file struct {
	*os.File
	info largo.Info
}

var (
	_ largo.File   = (*file)(nil)
	_ largo.OSFile = (*file)(nil)
)

func (f *file) Info() largo.Info           { return f.info }
func (f *file) OSFile() *os.File           { return f.File }
func (f *file) String() string             { return f.info.Name }
func (f *file) Stat() (fs.FileInfo, error) { return f.File.Stat() }

// mapErr wraps an operating-system error in the largo error kind it means.
// Paths that escape the root (through "..", or a symlink that leads out)
// read as not found: the caller learns nothing about what is outside.
func mapErr(err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", largo.ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", largo.ErrPermission, err)
	case errors.As(err, &errno) && (errno == syscall.ENOTDIR || errno == syscall.ELOOP || errno == syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %w", largo.ErrNotFound, err)
	case errors.As(err, &errno) && (errno == syscall.EMFILE || errno == syscall.ENFILE):
		return fmt.Errorf("%w: out of file descriptors: %w", largo.ErrBusy, err)
	case escapes(err):
		return fmt.Errorf("%w: %w", largo.ErrNotFound, err)
	}
	return err
}

// escapes reports whether err is os.Root's refusal of a path that leads out
// of the root. The standard library does not export that error, so it is
// recognised by its text; an unrecognised refusal is still a refusal, only
// reported as an internal error instead of not found.
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes from parent")
}
