package disk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// Commit fsyncs it, renames it over the target and fsyncs the target's
// folder.
func (s *Store) Create(_ context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkTarget(name, opt); err != nil {
		return nil, err
	}
	tmp, f, err := s.newTemp()
	if err != nil {
		return nil, err
	}
	return &upload{s: s, name: name, tmp: tmp, opt: opt, f: f, wb: spool.NewWriteback(f)}, nil
}

// Adopt implements largo.Adopter: staged, a file under largo.StateDir
// (checked by the caller, the write pipeline), becomes an Upload to name
// whose Commit renames it into place.
func (s *Store) Adopt(_ context.Context, name, staged string, opt largo.CreateOptions) (largo.Upload, error) {
	if err := s.checkTarget(name, opt); err != nil {
		return nil, err
	}
	f, err := s.root.OpenFile(staged, os.O_RDWR, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	return &upload{s: s, name: name, tmp: staged, opt: opt, f: f}, nil
}

// checkTarget refuses early what Commit would refuse anyway: the root, a
// folder at the target, a file where its folder should be, and under
// NoMkdir a missing folder.
func (s *Store) checkTarget(name string, opt largo.CreateOptions) error {
	if name == "" {
		return fmt.Errorf("the root: %w", largo.ErrIsDir)
	}
	if fi, err := s.root.Stat(name); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: %w", name, largo.ErrIsDir)
	}
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	fi, err := s.root.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
	case err != nil && errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
	case err != nil && opt.NoMkdir:
		return fmt.Errorf("folder %s: %w", dir, mapErr(err))
	}
	return nil
}

// upload is a file being written in TempDir (or a staged file adopted,
// which takes no more bytes).
type upload struct {
	s    *Store
	name string
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
	return in, created, nil
}

func (u *upload) commit(cond largo.Condition) (largo.Info, bool, error) {
	if err := u.f.Sync(); err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	unlock := u.s.locks.Lock(u.name)
	defer unlock()
	old, err := u.s.root.Stat(u.name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return largo.Info{}, false, writeErr(err)
	}
	if exists && old.IsDir() {
		return largo.Info{}, false, fmt.Errorf("%s: %w", u.name, largo.ErrIsDir)
	}
	if err := cond.Check(u.name, infoOrZero(u.name, old), exists); err != nil {
		return largo.Info{}, false, err
	}
	dir := path.Dir(u.name)
	made, err := u.s.mkdirs(dir, u.opt.NoMkdir)
	if err != nil {
		return largo.Info{}, false, err
	}
	if exists {
		// A replacement keeps the permissions the file had.
		if err := u.f.Chmod(old.Mode().Perm()); err != nil {
			return largo.Info{}, false, writeErr(err)
		}
	}
	if err := u.f.Close(); err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	if err := u.s.root.Rename(u.tmp, u.name); errors.Is(err, syscall.EXDEV) {
		err = u.s.moveAcross(u.tmp, u.name, old)
		if err != nil {
			return largo.Info{}, false, writeErr(err)
		}
	} else if err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	u.done = true
	if err := u.s.syncDirs(dir, made); err != nil {
		return largo.Info{}, false, writeErr(err)
	}
	fi, err := u.s.root.Stat(u.name)
	if err != nil {
		return largo.Info{}, false, mapErr(err)
	}
	return info(u.name, fi), !exists, nil
}

// moveAcross puts the file tmp at name when name's folder is on another
// filesystem (a mount inside the served folder), where no rename reaches:
// it copies tmp into a hidden temporary file beside name, syncs it, and
// renames that over name, so a reader still sees the old file or the
// whole new one; then it removes tmp. The copy is the kernel's
// (copy_file_range), with no buffer of largo's. old, when not nil, is the
// file being replaced, whose permissions the new one keeps.
func (s *Store) moveAcross(tmp, name string, old fs.FileInfo) error {
	src, err := s.root.Open(tmp)
	if err != nil {
		return err
	}
	defer src.Close()
	var rnd [8]byte
	rand.Read(rnd[:])
	dst := path.Join(path.Dir(name), fmt.Sprintf(".largo-%d-%s.part", os.Getpid(), hex.EncodeToString(rnd[:])))
	perm := fs.FileMode(0o644)
	if old != nil {
		perm = old.Mode().Perm()
	}
	f, err := s.root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(dst, name)
	}
	if err != nil {
		s.root.Remove(dst)
		return err
	}
	s.root.Remove(tmp)
	return nil
}

// infoOrZero is info(name, fi), or the zero Info when fi is nil.
func infoOrZero(name string, fi fs.FileInfo) largo.Info {
	if fi == nil {
		return largo.Info{}
	}
	return info(name, fi)
}

// mkdirs makes the folder dir ("." for the root) and the folders above it
// that are missing, and reports how many it made.
func (s *Store) mkdirs(dir string, noMkdir bool) (int, error) {
	if dir == "." {
		return 0, nil
	}
	fi, err := s.root.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return 0, fmt.Errorf("%s: %w", dir, largo.ErrNotDir)
		}
		return 0, nil
	}
	if noMkdir || !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("folder %s: %w", dir, writeErr(err))
	}
	made := 0
	for p := dir; p != "."; p = path.Dir(p) {
		if _, err := s.root.Stat(p); err == nil {
			break
		}
		made++
	}
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return 0, writeErr(err)
	}
	return made, nil
}

// syncDirs fsyncs the folder dir, and when made folders were created above
// the file, each of their parents too, so that the new entries survive a
// crash.
func (s *Store) syncDirs(dir string, made int) error {
	for i := 0; i <= made; i++ {
		if err := s.syncDir(dir); err != nil {
			return err
		}
		dir = path.Dir(dir)
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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

// Remove implements largo.Remover. A symlink is removed, not what it
// points to.
func (s *Store) Remove(_ context.Context, name string, opt largo.RemoveOptions) error {
	if name == "" {
		return fmt.Errorf("the root folder: %w", largo.ErrPermission)
	}
	unlock := s.locks.Lock(name)
	defer unlock()
	lfi, err := s.root.Lstat(name)
	if err != nil {
		return mapErr(err)
	}
	fi, err := s.root.Stat(name)
	if err != nil {
		fi = lfi // a dangling symlink
	}
	if fi.IsDir() && lfi.Mode()&fs.ModeSymlink == 0 {
		if opt.Condition.IfMatch != "" {
			return fmt.Errorf("%s is a folder: %w", name, largo.ErrPrecondition)
		}
		if opt.Recursive {
			err = s.root.RemoveAll(name)
		} else {
			err = s.root.Remove(name)
		}
	} else {
		if err := opt.Condition.Check(name, info(name, fi), true); err != nil {
			return err
		}
		err = s.root.Remove(name)
	}
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOTEMPTY || errno == syscall.EEXIST) {
			return fmt.Errorf("%s: %w", name, largo.ErrNotEmpty)
		}
		return writeErr(err)
	}
	return s.syncDir(path.Dir(name))
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
// process, restarted after a crash, is again process 1).
func (s *Store) PrepareWrites(ctx context.Context) (int, error) {
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
