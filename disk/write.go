//go:build unix

package disk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"largo"
	"largo/internal/spool"
)

// TempDir is the folder, inside the served root, that holds uploads in
// progress: on the same filesystem as their targets, so that a commit is a
// rename, and hidden like all of largo's state.
const TempDir = largo.StateDir + "/tmp"

var (
	_ largo.Creator       = (*Store)(nil)
	_ largo.Adopter       = (*Store)(nil)
	_ largo.Remover       = (*Store)(nil)
	_ largo.SpaceReporter = (*Store)(nil)
	_ largo.Upload        = (*upload)(nil)
)

// Create implements largo.Creator. The bytes go to a new file in TempDir;
// the upload holds the folder name will land in from now on, and Commit
// renames the file into that folder.
func (s *Store) Create(_ context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	p, err := s.hold(name, opt.NoMkdir)
	if err != nil {
		return nil, err
	}
	tmp, f, err := s.newTemp()
	if err != nil {
		p.release()
		return nil, err
	}
	return &upload{s: s, at: p, tmp: tmp, opt: opt, f: f, wb: spool.NewWriteback(f)}, nil
}

// Adopt implements largo.Adopter: staged, a file under largo.StateDir
// (checked by the caller, the write pipeline), becomes an Upload to name
// whose Commit renames it into place.
func (s *Store) Adopt(_ context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	p, err := s.hold(name, opt.NoMkdir)
	if err != nil {
		return nil, err
	}
	f, err := s.root.OpenFile(staged, os.O_RDWR, 0)
	if err != nil {
		p.release()
		return nil, mapErr(err)
	}
	return &upload{s: s, at: p, tmp: staged, opt: opt, f: f}, nil
}

// upload is a file being written in TempDir (or a staged file adopted,
// which takes no more bytes), and the place it will land.
type upload struct {
	s    *Store
	at   *place
	tmp  string
	opt  largo.CreateOptions
	f    *os.File
	wb   *spool.Writeback // nil for an adopted file
	done bool
}

func (u *upload) Write(p []byte) (int, error) {
	if u.done || u.wb == nil {
		return 0, errors.New("write to a finished or adopted upload")
	}
	n, err := u.wb.Write(p)
	if err != nil {
		return n, writeErr(err)
	}
	return n, nil
}

func (u *upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	u.f.Close()
	u.at.release()
	if err := u.s.root.Remove(u.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Commit implements largo.Upload. The file is made durable before the
// per-name lock is taken, so concurrent uploads to one name wait only for
// each other's rename.
func (u *upload) Commit(_ context.Context, cond largo.Condition) (largo.Info, bool, error) {
	if u.done {
		return largo.Info{}, false, errors.New("commit of a finished upload")
	}
	in, created, err := u.commit(cond)
	if err != nil {
		u.Abort()
		return largo.Info{}, false, err
	}
	u.at.release()
	return in, created, nil
}

func (u *upload) commit(cond largo.Condition) (largo.Info, bool, error) {
	if err := u.f.Sync(); err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	p := u.at
	unlock := u.s.locks.Lock(p.name)
	defer unlock()
	if err := p.still(u.s); err != nil {
		return largo.Info{}, false, err
	}
	var m made
	defer m.close()
	dir, err := p.mkdirs(&m)
	if err != nil {
		return largo.Info{}, false, err
	}
	old, err := statIn(dir, p.elem)
	if err != nil {
		return largo.Info{}, false, err
	}
	exists := old != nil
	var in largo.Info
	if exists {
		if isDir(old) {
			return largo.Info{}, false, fmt.Errorf("%s: %w", p.name, largo.ErrIsDir)
		}
		in = infoStat(p.name, old)
	}
	if err := cond.Check(p.name, in, exists); err != nil {
		return largo.Info{}, false, err
	}
	perm := uint32(0o644)
	if exists && isReg(old) {
		// A replacement keeps the permissions the file had.
		perm = old.Mode & 0o777
		if err := u.f.Chmod(fs.FileMode(perm)); err != nil {
			return largo.Info{}, false, writeErr(err)
		}
	}
	if err := u.f.Close(); err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	err = unix.Renameat(u.s.dirFd, u.tmp, dir, p.elem)
	if errors.Is(err, unix.EXDEV) {
		err = u.s.moveAcross(u.tmp, dir, p.elem, perm)
	}
	if err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	u.done = true
	if err := p.sync(&m, dir); err != nil {
		return largo.Info{}, false, err
	}
	st, err := statIn(dir, p.elem)
	if err != nil || st == nil {
		return largo.Info{}, false, fmt.Errorf("%s: gone just after its commit: %w", p.name, largo.ErrNotFound)
	}
	return infoStat(p.name, st), !exists, nil
}

// writeErr wraps an operating-system error met while writing in the largo
// error kind it means.
func writeErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG:
			return fmt.Errorf("%w: %w", largo.ErrNoSpace, err)
		case syscall.ENOTDIR, syscall.EEXIST:
			return fmt.Errorf("%w: %w", largo.ErrNotDir, err)
		case syscall.EISDIR:
			return fmt.Errorf("%w: %w", largo.ErrIsDir, err)
		case syscall.EROFS:
			// The filesystem went read-only (an error remount, a full
			// journal): the server's trouble, a 500, not the client's.
			return fmt.Errorf("filesystem read-only: %w", err)
		}
	}
	return mapErr(err)
}

// Remove implements largo.Remover. A symbolic link is removed, never
// what it leads to; nothing on the way to name is followed.
func (s *Store) Remove(_ context.Context, name string, opt largo.RemoveOptions) error {
	if name == "" {
		return fmt.Errorf("the root folder: %w", largo.ErrPermission)
	}
	unlock := s.locks.Lock(name)
	defer unlock()
	dir, elem := split(name)
	pfd, err := s.folder(dir)
	if errors.Is(err, largo.ErrNotDir) {
		err = fmt.Errorf("%s: %w", name, largo.ErrNotFound)
	}
	if err != nil {
		return err
	}
	defer closeFd(pfd)
	st, err := statIn(pfd, elem)
	switch {
	case err != nil:
		return err
	case st == nil:
		return fmt.Errorf("%s: %w", name, largo.ErrNotFound)
	case isDir(st):
		if opt.Condition.IfMatch != "" {
			return fmt.Errorf("%s is a folder: %w", name, largo.ErrPrecondition)
		}
		if opt.Recursive {
			err = removeAll(pfd, elem)
		} else {
			err = unix.Unlinkat(pfd, elem, unix.AT_REMOVEDIR)
		}
	default:
		if err := opt.Condition.Check(name, infoStat(name, st), true); err != nil {
			return err
		}
		err = unix.Unlinkat(pfd, elem, 0)
	}
	if err != nil {
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", name, largo.ErrNotEmpty)
		}
		return writeErr(err)
	}
	if err := unix.Fsync(pfd); err != nil {
		return writeErr(err)
	}
	return nil
}

// newTemp creates a new empty file in TempDir, for writing.
func (s *Store) newTemp() (string, *os.File, error) {
	if err := s.stateDir(); err != nil {
		return "", nil, writeErr(err)
	}
	if err := s.root.MkdirAll(TempDir, 0o700); err != nil {
		return "", nil, writeErr(err)
	}
	tmp := tempName()
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", nil, writeErr(err)
	}
	return tmp, f, nil
}

// tempName returns a new name in TempDir, made of the writing process's
// ID and random digits: a sweep can tell the files of a process that died
// (a crash) from those of one still writing (another largo on the same
// folder, such as largo precompress beside largo serve).
func tempName() string {
	var rnd [12]byte
	rand.Read(rnd[:])
	return fmt.Sprintf("%s/%d-%s.part", TempDir, os.Getpid(), hex.EncodeToString(rnd[:]))
}

// owner returns the process ID a temporary file's name carries, or 0.
func owner(name string) int {
	head, _, ok := strings.Cut(name, "-")
	if !ok {
		return 0
	}
	pid, err := strconv.Atoi(head)
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// PrepareWrites readies the folder for writes, before this process
// writes: it removes what writes of processes that are gone (a crash)
// left in TempDir, whatever its age, and returns how many entries it
// removed. Files of another process still running are left alone, so a
// second largo on the folder is safe; files that carry this process's own
// ID are a gone process's that had the same ID (a container's first
// process, restarted after a crash, is again process 1). The state area,
// if an older version left it open to others, is closed (0700) first;
// where it cannot be, the first write says why.
func (s *Store) PrepareWrites(ctx context.Context) (int, error) {
	s.stateDir()
	self := os.Getpid()
	return s.sweep(func(name string, _ fs.FileInfo) bool {
		pid := owner(name)
		return pid == 0 || pid == self || !alive(pid)
	})
}

// Sweep removes the entries of TempDir left by processes that are gone,
// and those last written before before: the files of writes that stalled
// that long, whatever wrote them (uploads, state records, sidecars). It
// returns how many it removed.
func (s *Store) Sweep(ctx context.Context, before time.Time) (int, error) {
	return s.sweep(func(name string, fi fs.FileInfo) bool {
		pid := owner(name)
		return pid == 0 || !alive(pid) || fi.ModTime().Before(before)
	})
}

func (s *Store) sweep(stale func(name string, fi fs.FileInfo) bool) (int, error) {
	d, err := s.root.Open(TempDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !stale(e.Name(), fi) {
			continue // gone meanwhile, or still being written
		}
		if err := s.root.RemoveAll(TempDir + "/" + e.Name()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
