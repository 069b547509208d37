//go:build unix

package disk

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"largo"
)

// place is where a write will land, held from the write's creation to
// its commit, so that the write commits in the folder it was judged in:
// the deepest folder of its name that existed at creation, open (a
// descriptor, which stays with the folder whatever happens to its name),
// the folders still to make below it, and the file's own element.
type place struct {
	name    string   // the file's physical name
	held    *os.File // the deepest existing folder of name
	heldAt  string   // its physical name
	missing []string // the folders to make below it, in order
	elem    string   // the file's element in its folder
}

// folder opens the physical folder dir beneath the store's folder,
// following no link, to act in it.
func (s *Store) folder(dir string) (int, error) {
	fd, err := s.beneath(dir, dirFlags)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
	case errors.Is(err, unix.ENOENT):
		return -1, fmt.Errorf("folder %s: %w", dir, largo.ErrNotFound)
	}
	return -1, err
}

// hold returns the place of a write of the physical name. A name whose
// folder is missing is held at the deepest folder there is, unless
// noMkdir, which refuses it (largo.ErrNotFound); a file where a folder
// should be is largo.ErrNotDir, a folder at name largo.ErrIsDir, a link
// on the way largo.ErrSymlink.
func (s *Store) hold(name string, noMkdir bool) (*place, error) {
	if name == "" {
		return nil, fmt.Errorf("the root: %w", largo.ErrIsDir)
	}
	dir, elem := split(name)
	p := &place{name: name, elem: elem}
	for at := dir; ; {
		fd, err := s.beneath(at, dirFlags)
		if err == nil {
			p.held, p.heldAt = os.NewFile(uintptr(fd), at), at
			break
		}
		switch {
		case errors.Is(err, unix.ENOTDIR):
			return nil, fmt.Errorf("%s: %w", at, largo.ErrNotDir)
		case !errors.Is(err, unix.ENOENT):
			return nil, err
		case noMkdir:
			return nil, fmt.Errorf("folder %s: %w", dir, largo.ErrNotFound)
		}
		up, last := split(at)
		p.missing = append([]string{last}, p.missing...)
		at = up
	}
	if len(p.missing) == 0 {
		if st, err := statIn(int(p.held.Fd()), elem); err == nil && st != nil && isDir(st) {
			p.held.Close()
			return nil, fmt.Errorf("%s: %w", name, largo.ErrIsDir)
		}
	}
	return p, nil
}

// release lets the held folder go.
func (p *place) release() {
	if p.held != nil {
		p.held.Close()
		p.held = nil
	}
}

// still reports, with an error wrapping largo.ErrChanged, whether the
// held folder is no longer the one at its name: moved, removed, or
// replaced (by another folder, or by a link) since the write began.
func (p *place) still(s *Store) error {
	changed := fmt.Errorf("%s: %w", p.heldAt, largo.ErrChanged)
	fd, err := s.beneath(p.heldAt, statFlags|unix.O_DIRECTORY)
	if err != nil {
		return changed
	}
	var now, held unix.Stat_t
	err = unix.Fstat(fd, &now)
	closeFd(fd)
	if err != nil || unix.Fstat(int(p.held.Fd()), &held) != nil || now.Dev != held.Dev || now.Ino != held.Ino {
		return changed
	}
	return nil
}

// made is the folders a commit opened below the held one: each
// descriptor, and whether the commit made the folder.
type made struct {
	fds     []int
	created []bool
}

func (m *made) close() {
	for _, fd := range m.fds {
		closeFd(fd)
	}
}

// mkdirs makes the missing folders below the held one, following no
// link (one made there meanwhile changes the place: largo.ErrChanged),
// and returns the descriptor of the file's folder.
func (p *place) mkdirs(m *made) (int, error) {
	dir := int(p.held.Fd())
	for _, elem := range p.missing {
		err := unix.Mkdirat(dir, elem, 0o755)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, writeErr(err)
		}
		fd, oerr := unix.Openat(dir, elem, dirFlags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(oerr, unix.ELOOP):
			return -1, fmt.Errorf("%s: %w", elem, largo.ErrChanged)
		case errors.Is(oerr, unix.ENOTDIR):
			return -1, fmt.Errorf("%s: %w", elem, largo.ErrNotDir)
		case oerr != nil:
			return -1, writeErr(oerr)
		}
		m.fds = append(m.fds, fd)
		m.created = append(m.created, err == nil)
		dir = fd
	}
	return dir, nil
}

// sync fsyncs the file's folder and, for each folder the commit made,
// the folder that holds it, so that the new entries survive a crash.
func (p *place) sync(m *made, dir int) error {
	if err := unix.Fsync(dir); err != nil {
		return writeErr(err)
	}
	parent := int(p.held.Fd())
	for i, fd := range m.fds {
		if m.created[i] {
			if err := unix.Fsync(parent); err != nil {
				return writeErr(err)
			}
		}
		parent = fd
	}
	return nil
}

// moveAcross puts the file tmp at elem of the folder dir when that folder
// is on another filesystem (a mount inside the served folder), where no
// rename reaches: it copies tmp into a hidden temporary file beside the
// target, syncs it, and renames that over the target, so a reader still
// sees the old file or the whole new one; then it removes tmp. The copy
// is the kernel's (copy_file_range), with no buffer of largo's. perm is
// the permission the new file gets.
func (s *Store) moveAcross(tmp string, dir int, elem string, perm uint32) error {
	src, err := s.root.Open(tmp)
	if err != nil {
		return err
	}
	defer src.Close()
	var rnd [8]byte
	rand.Read(rnd[:])
	dst := fmt.Sprintf(".largo-%d-%s.part", os.Getpid(), hex.EncodeToString(rnd[:]))
	fd, err := unix.Openat(dir, dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), dst)
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, dst, dir, elem)
	}
	if err != nil {
		unix.Unlinkat(dir, dst, 0)
		return err
	}
	s.root.Remove(tmp)
	return nil
}

// removeAll removes the entry elem of the folder dir and, if it is a
// folder, everything in it, following no link (a link is removed, never
// what it leads to).
func removeAll(dir int, elem string) error {
	err := unix.Unlinkat(dir, elem, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(dir, elem, dirFlags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), elem)
	defer d.Close()
	for {
		// Read from the start each time: the entries removed are gone,
		// and what is left is what remains to remove.
		if _, err := d.Seek(0, io.SeekStart); err != nil {
			return err
		}
		names, err := d.Readdirnames(1024)
		if len(names) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
		for _, n := range names {
			if err := removeAll(fd, n); err != nil {
				return err
			}
		}
	}
	return unix.Unlinkat(dir, elem, unix.AT_REMOVEDIR)
}
