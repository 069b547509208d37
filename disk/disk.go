// Package disk implements largo.Store on a local folder.
//
// Every open goes through an os.Root, so "..", absolute paths and symlinks
// that lead out of the folder fail by construction, whatever the name; names
// are still checked with largo.ParseName by the caller. Symlinks that stay
// inside the folder work. ETags are strong: they change with the inode, the
// size or the modification time.
//
// A Store is safe for concurrent use. Files it opens are backed by *os.File
// and implement largo.OSFile, so downloads keep sendfile.
//
// Writes (write.go) stream into a temporary file in TempDir, inside the
// served folder and so on the same filesystem, hashed with SHA-256 on the
// way; a commit fsyncs the file, renames it over the target and fsyncs the
// folder, so a reader sees the old file or the whole new one, and after a
// crash the target is one or the other. Commits and removals of one name
// are serialised by a per-name lock inside the process; conditions are
// checked under it. Sweep removes the temporary files a crash left.
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
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"largo"
	"largo/internal/keylock"
)

// Store is a largo.Store on a local folder. Create one with Open.
type Store struct {
	dir   string
	real  string   // dir with its own links resolved
	dirF  *os.File // dir, for the descriptor openDirect opens from
	dirFd int      // -1: none
	// noOpenat2 is set once the kernel refused openat2.
	noOpenat2 atomic.Bool
	root      *os.Root
	locks     keylock.Set // by name: commits and removals

	swapMu sync.Mutex // the state area's swaps, in this process

	stateOnce sync.Once // the state area made the server's alone
	stateErr  error
}

var _ largo.Store = (*Store)(nil)

// Open returns a Store on the folder dir, which must exist and be readable.
func Open(dir string) (*Store, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// A folder we may open but not list is as good as missing.
	f, err := root.Open(".")
	if err == nil {
		_, err = f.ReadDir(1)
		f.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		root.Close()
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		root.Close()
		return nil, err
	}
	st := &Store{dir: dir, real: real, root: root, dirFd: -1}
	if d, err := os.Open(dir); err == nil {
		st.dirF, st.dirFd = d, int(d.Fd())
	}
	return st, nil
}

// Close releases the folder. Files already open stay usable.
func (s *Store) Close() error {
	if s.dirF != nil {
		s.dirF.Close()
	}
	return s.root.Close()
}

// Dir returns the folder the store was opened on.
func (s *Store) Dir() string { return s.dir }

// Root returns the os.Root the store works through, for packages that keep
// their own state inside the served folder (uploads).
func (s *Store) Root() *os.Root { return s.root }

// Stat implements largo.Store.
func (s *Store) Stat(_ context.Context, name string) (largo.Info, error) {
	fi, err := s.root.Stat(osName(name))
	if err != nil {
		return largo.Info{}, mapErr(err)
	}
	return info(name, fi), nil
}

// Open implements largo.Store.
func (s *Store) Open(_ context.Context, name string) (largo.File, error) {
	f, direct, err := s.open(name)
	if err != nil {
		return nil, mapErr(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, mapErr(err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	}
	if !fi.Mode().IsRegular() {
		// Devices, pipes and sockets: reading them could block forever.
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file: %w", name, largo.ErrNotFound)
	}
	blocking(f)
	return &file{File: f, info: info(name, fi), name: name, direct: direct, root: s.real}, nil
}

// List implements largo.Store. Symlinks are resolved inside the root; those
// that point outside it or nowhere are left out, as are hidden entries,
// names no request could name (a backslash, a control byte: what
// largo.ParseName refuses, and what an archive must never hold) and
// anything that is neither a regular file nor a folder.
func (s *Store) List(_ context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		// Through os.Root, whose folders read their entries' metadata
		// relative to themselves (a folder openDirect opened would read
		// them relative to the working directory).
		d, err := s.root.OpenFile(osName(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			yield(largo.Info{}, mapErr(err))
			return
		}
		defer d.Close()
		fi, err := d.Stat()
		if err != nil {
			yield(largo.Info{}, mapErr(err))
			return
		}
		if !fi.IsDir() {
			yield(largo.Info{}, fmt.Errorf("%s: %w", name, largo.ErrNotDir))
			return
		}
		for {
			ents, err := d.ReadDir(256)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") || !validElem(e.Name()) {
					continue
				}
				child := largo.Join(name, e.Name())
				var fi fs.FileInfo
				var ferr error
				link := e.Type()&fs.ModeSymlink != 0
				if link {
					fi, ferr = s.root.Stat(child)
				} else {
					fi, ferr = e.Info()
				}
				if ferr != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
					continue // vanished, dangling, leads out, or a device
				}
				in := info(child, fi)
				in.Link = link
				if !yield(in, nil) {
					return
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
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

// open opens name for reading without blocking: opening a named pipe
// waits for a writer, which would hold the request (and a thread) for ever.
// The flag changes nothing for files and folders, whose type the callers
// check next.
//
// direct reports that no symbolic link was on the way (openDirect), so
// that the file is where its name says.
func (s *Store) open(name string) (f *os.File, direct bool, err error) {
	if f, err := s.openDirect(name); f != nil || err != nil {
		return f, f != nil, err
	}
	f, err = s.root.OpenFile(osName(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return f, false, err
}

// file is an open file of the store.
type file struct {
	*os.File
	info   largo.Info
	name   string // as opened
	direct bool   // opened with no link on the way: it is at name
	root   string // the folder's real path, which Location strips
}

var (
	_ largo.File    = (*file)(nil)
	_ largo.OSFile  = (*file)(nil)
	_ largo.Located = (*file)(nil)
)

func (f *file) Info() largo.Info           { return f.info }
func (f *file) OSFile() *os.File           { return f.File }
func (f *file) String() string             { return f.info.Name }
func (f *file) Stat() (fs.FileInfo, error) { return f.File.Stat() }

// osName turns a store name into a name for os.Root.
func osName(name string) string {
	if name == "" {
		return "."
	}
	return name
}

// info builds the metadata of name from fi.
func info(name string, fi fs.FileInfo) largo.Info {
	in := largo.Info{
		Name:    name[strings.LastIndexByte(name, '/')+1:],
		ModTime: fi.ModTime(),
		IsDir:   fi.IsDir(),
	}
	if !in.IsDir {
		in.Size = fi.Size()
		in.ETag = etag(fi)
	}
	return in
}

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
