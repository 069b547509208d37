package dav

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"maps"
	"mime"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/ingest"
)

// fileSystem is the webdav.FileSystem of one request: reads through the
// store as its requester may see it, every change through the write
// pipeline with the lock tokens the request holds.
//
// It also follows the walk of a PROPFIND of Depth 1, which the library
// makes by listing the folder (Readdir, of which it reads only the
// names), then looking each entry up again, in the listing's order,
// several times (Stat, then an open per set of properties). Readdir keeps
// only the names, and the look-ups are answered from a second listing of
// the folder read in step with the walk: a folder of many entries costs
// two listings, no request per entry on a bucket, and a memory of its
// names, not of their metadata.
type fileSystem struct {
	h      *Handler
	view   largo.Store
	at     scope // how the request names files
	locks  *requestLocks
	tokens []string // the If header's

	// propfind is set for a PROPFIND, whose answer shows the live
	// properties of locks (lockdiscovery.go), and whose listings show
	// only what shows lets through (nil: everything).
	propfind bool
	shows    func(dir string) func(largo.Info) bool

	failed error // the last error of a change, which the answer tells

	src, dst string // a COPY's or MOVE's names, else empty
	// copying is set for a COPY, whose walk of a folder leaves linked
	// folders out.
	copying bool
	// cleared is set once the request removed what was at dst (a COPY
	// or MOVE with Overwrite), whose folder was there then, though on a
	// bucket it may be gone with it.
	cleared bool

	dir       string // the folder Readdir listed last, when listed
	listed    bool
	withProps map[string]bool // its entries with dead properties
	hidden    map[string]bool // its entries shows hid
	locksAt   *folderLocks    // the locks on it and its entries, when read
	anyLocks  int8            // 0: not asked yet; 1: the state area holds no lock; 2: some
	pull      func() (largo.Info, error, bool)
	stop      func()
	cur       *fileInfo // the entry the walk is at
}

// close ends the walk's listing, if any.
func (fsys *fileSystem) close() {
	if fsys.stop != nil {
		fsys.stop()
		fsys.pull, fsys.stop = nil, nil
	}
}

var _ webdav.FileSystem = (*fileSystem)(nil)

// allTokens are the lock tokens the request's writes present: its If
// header's, and those of the locks the library took for it.
func (fsys *fileSystem) allTokens() []string {
	return append(fsys.tokens[:len(fsys.tokens):len(fsys.tokens)], fsys.locks.made...)
}

// storeName turns a path of the library into a store name; invalid names
// read as missing.
func (fsys *fileSystem) storeName(op, p string) (string, error) {
	if _, err := largo.ParseName(path.Clean("/" + p)); err != nil {
		return "", &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	return fsys.at.name(p), nil
}

// osErr turns a store or pipeline error into what the library reads:
// the os package's kinds, which it maps to statuses.
func osErr(op, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, largo.ErrNotFound), errors.Is(err, largo.ErrNotDir):
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case errors.Is(err, largo.ErrExist):
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	case errors.Is(err, largo.ErrPermission):
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	}
	return err
}

// fail records err, an error of a change, as the one the request's
// answer is to tell, and returns what the library reads of it (osErr).
// The library answers most errors of a change with a status of its own
// (500, or 403 for any failed rename); the Handler puts the status of the
// write pipeline's table (wire.Status) in its place.
func (fsys *fileSystem) fail(op, name string, err error) error {
	if err == nil {
		return nil
	}
	fsys.failed = err
	return osErr(op, name, err)
}

// checkFolder checks that the folder name would be made in exists:
// WebDAV makes no folders on the way (RFC 4918, 9.7.1, 9.8.5, 9.9.4 and
// 9.10.4: 409 Conflict).
func (fsys *fileSystem) checkFolder(ctx context.Context, name string) error {
	return largo.CheckParent(ctx, fsys.h.cfg.Store, name)
}

// keeper returns what admits the dead properties of name at a size: the
// write pipeline's quotas, for the requester (ingest.Pipeline.KeepBeside).
func (fsys *fileSystem) keeper(ctx context.Context, name string) keeper {
	pl, err := fsys.writes()
	if err != nil {
		return func(int64) error { return nil }
	}
	return func(size int64) error { return pl.KeepBeside(ctx, name, size) }
}

func (fsys *fileSystem) writes() (*ingest.Pipeline, error) {
	if fsys.h.cfg.Writes == nil {
		return nil, fs.ErrPermission
	}
	return fsys.h.cfg.Writes, nil
}

// lookup returns the metadata of name: from the listing read in step
// with the walk when name is the walk's next entry, else from the store.
func (fsys *fileSystem) lookup(ctx context.Context, name string) (*fileInfo, error) {
	if fsys.listed && name != "" && largo.Parent(name) == fsys.dir {
		if fi := fsys.step(ctx, path.Base(name)); fi != nil {
			return fi, nil
		}
	}
	if largo.Reserved(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	in, err := fsys.view.Stat(ctx, name)
	if err != nil {
		return nil, osErr("stat", name, err)
	}
	fi := newInfo(in)
	return &fi, nil
}

// step returns the entry base of the walk's folder if it is where the
// walk is or the next one in the listing; nil otherwise.
func (fsys *fileSystem) step(ctx context.Context, base string) *fileInfo {
	if fsys.cur != nil && fsys.cur.name == base {
		return fsys.cur
	}
	if fsys.pull == nil {
		fsys.pull, fsys.stop = iter.Pull2(fsys.view.List(ctx, fsys.dir))
	}
	in, err, ok := fsys.pull()
	for ok && err == nil && fsys.hidden[in.Name] {
		in, err, ok = fsys.pull() // an entry Readdir left out
	}
	if !ok || err != nil {
		fsys.listed = false // out of step: the store answers from now on
		fsys.close()
		return nil
	}
	fi := newInfo(in)
	fsys.cur = &fi
	if in.Name != base {
		return nil
	}
	return fsys.cur
}

func (fsys *fileSystem) Stat(ctx context.Context, p string) (os.FileInfo, error) {
	name, err := fsys.storeName("stat", p)
	if err != nil {
		return nil, err
	}
	return fsys.lookup(ctx, name)
}

func (fsys *fileSystem) OpenFile(ctx context.Context, p string, flag int, _ os.FileMode) (webdav.File, error) {
	name, err := fsys.storeName("open", p)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		return fsys.create(ctx, name)
	}
	fi, err := fsys.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return &readFile{fsys: fsys, ctx: ctx, name: name, info: fi}, nil
}

// create starts a write of name through the pipeline, committed when the
// file is closed.
func (fsys *fileSystem) create(ctx context.Context, name string) (webdav.File, error) {
	if Discards(name) {
		return &discardFile{info: fileInfo{name: path.Base(name)}}, nil
	}
	p, err := fsys.writes()
	if err != nil {
		return nil, err
	}
	if err := fsys.checkFolder(ctx, name); err != nil {
		return nil, fsys.fail("create", name, err)
	}
	w, err := p.Begin(ctx, ingest.Target{Name: name, Size: -1, Tokens: fsys.allTokens(), Protocol: "webdav"})
	if err != nil {
		return nil, fsys.fail("create", name, err)
	}
	return &writeFile{fsys: fsys, ctx: ctx, name: name, w: w}, nil
}

func (fsys *fileSystem) Mkdir(ctx context.Context, p string, _ os.FileMode) error {
	name, err := fsys.storeName("mkdir", p)
	if err != nil {
		return err
	}
	pl, err := fsys.writes()
	if err != nil {
		return err
	}
	if err := ingest.CheckName(name); err != nil {
		return fsys.fail("mkdir", name, err)
	}
	if err := pl.CheckLock(ctx, name, false, fsys.allTokens()); err != nil {
		return fsys.fail("mkdir", name, err)
	}
	dm, ok := fsys.h.cfg.Store.(largo.DirMaker)
	if !ok {
		return largo.ErrUnsupported
	}
	if fsys.clearedFor(name) {
		// The folder a copy replaced a file with: its parent was there.
		if err := pl.MakeDirs(ctx, name); err != nil {
			return fsys.fail("mkdir", name, err)
		}
	} else {
		if err := pl.CheckFolder(ctx, name); err != nil {
			return fsys.fail("mkdir", name, err)
		}
		if err := dm.MakeDir(ctx, name); err != nil {
			return fsys.fail("mkdir", name, err)
		}
	}
	pl.FolderMade(ctx, name)
	return nil
}

func (fsys *fileSystem) RemoveAll(ctx context.Context, p string) error {
	name, err := fsys.storeName("remove", p)
	if err != nil {
		return err
	}
	if fsys.replaces(ctx, name) {
		// A file copied or moved onto a file replaces it when the copy
		// commits (or the rename is made): removed first, it would be
		// lost if the copy then failed (too large, no space). Its dead
		// properties go now, as a removal would take them.
		pl, err := fsys.writes()
		if err != nil {
			return err
		}
		if _, err := pl.CheckRemove(ctx, name, largo.Condition{}, fsys.allTokens()); err != nil {
			return fsys.fail("remove", name, err)
		}
		pl.Forget(ctx, name)
		return nil
	}
	return fsys.remove(ctx, name)
}

// clearedFor reports whether name is the destination the request
// cleared, whose folder was there.
func (fsys *fileSystem) clearedFor(name string) bool { return fsys.cleared && name == fsys.dst }

// replaces reports whether name is the destination of the request's COPY
// or MOVE of a file, and a file itself.
func (fsys *fileSystem) replaces(ctx context.Context, name string) bool {
	if fsys.src == "" || name != fsys.dst {
		return false
	}
	src, err := fsys.view.Stat(ctx, fsys.src)
	if err != nil || src.IsDir {
		return false
	}
	dst, err := fsys.h.cfg.Store.Stat(ctx, name)
	return err == nil && !dst.IsDir
}

func (fsys *fileSystem) remove(ctx context.Context, name string) error {
	pl, err := fsys.writes()
	if err != nil {
		return err
	}
	rm, err := pl.CheckRemove(ctx, name, largo.Condition{}, fsys.allTokens())
	if err != nil {
		return fsys.fail("remove", name, err)
	}
	if name == fsys.dst && fsys.src != "" {
		if err := fsys.checkReplace(ctx, pl); err != nil {
			return fsys.fail("remove", name, err)
		}
	}
	in, _ := fsys.h.cfg.Store.Stat(ctx, name) // for the deleted event
	err = rm.Remove(ctx, name, largo.RemoveOptions{Recursive: true})
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return fsys.fail("remove", name, err)
	}
	if name == fsys.dst {
		fsys.cleared = true
	}
	if err == nil {
		pl.Removed(ctx, name, in)
	} else {
		pl.Forget(ctx, name) // gone already: no deletion of this request's
	}
	return nil
}

func (fsys *fileSystem) Rename(ctx context.Context, oldPath, newPath string) error {
	from, err := fsys.storeName("rename", oldPath)
	if err != nil {
		return err
	}
	to, err := fsys.storeName("rename", newPath)
	if err != nil {
		return err
	}
	pl, err := fsys.writes()
	if err != nil {
		return err
	}
	for _, n := range []string{from, to} {
		if err := ingest.CheckName(n); err != nil {
			return fsys.fail("rename", n, err)
		}
	}
	tokens := fsys.allTokens()
	if _, err := pl.CheckRemove(ctx, from, largo.Condition{}, tokens); err != nil {
		return fsys.fail("rename", from, err)
	}
	if err := pl.CheckLock(ctx, to, true, tokens); err != nil {
		return fsys.fail("rename", to, err)
	}
	if err := pl.CheckMove(ctx, from, to); err != nil {
		return fsys.fail("rename", to, err)
	}
	if _, err := fsys.view.Stat(ctx, from); err != nil {
		return fsys.fail("rename", from, err)
	}
	if err := fsys.checkFolder(ctx, to); err != nil && !fsys.clearedFor(to) {
		return fsys.fail("rename", to, err)
	}
	if rn, ok := fsys.h.cfg.Store.(largo.Renamer); ok {
		err := rn.Rename(ctx, from, to)
		if err == nil {
			pl.Renamed(ctx, from, to) // the properties and digests go along
			return nil
		}
		if !errors.Is(err, largo.ErrUnsupported) {
			return fsys.fail("rename", from, err)
		}
	}
	// No rename: each file copied, then removed, by the write pipeline
	// (ingest.Pipeline.MoveByCopy, which the page's move shares), its
	// properties with it. What the requester cannot see stays where it
	// was.
	return fsys.fail("move", from, pl.MoveByCopy(ctx, fsys.view, from, to, tokens))
}

// fileInfo is the os.FileInfo of an entry: small, since a listing holds
// one per entry. It gives the library the store's ETag and media type, so
// that neither is computed by opening the file.
type fileInfo struct {
	name  string
	size  int64
	mod   time.Time
	dir   bool
	etag  string
	ctype string
}

var (
	_ webdav.ETager       = (*fileInfo)(nil)
	_ webdav.ContentTyper = (*fileInfo)(nil)
)

func newInfo(in largo.Info) fileInfo {
	return fileInfo{name: in.Name, size: in.Size, mod: in.ModTime, dir: in.IsDir, etag: in.ETag, ctype: in.ContentType}
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) ModTime() time.Time { return fi.mod }
func (fi *fileInfo) IsDir() bool        { return fi.dir }
func (fi *fileInfo) Sys() any           { return nil }
func (fi *fileInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

func (fi *fileInfo) ETag(context.Context) (string, error) {
	if fi.etag == "" {
		return "", webdav.ErrNotImplemented
	}
	return fi.etag, nil
}

// ContentType is the store's media type, else the name's, else
// application/octet-stream: never a sniff, which would open every file of
// a listing.
func (fi *fileInfo) ContentType(context.Context) (string, error) {
	if fi.ctype != "" {
		return fi.ctype, nil
	}
	if ct := mime.TypeByExtension(path.Ext(fi.name)); ct != "" {
		return ct, nil
	}
	return "application/octet-stream", nil
}

// entries lists the folder dir for Readdir: the names of its entries in
// the store's order (the order of the walk's second listing, see step),
// without those fsys.shows hides, nor, for a COPY, linked folders, which
// it returns apart for the walk to pass over. The test is asked only of the sidecars (names of the form
// largo.SidecarBase knows) and of the files they would stand for, fed in
// name order, which is all it needs: so the listing holds no more than
// names but for those, read again in a second listing when the first
// held both a sidecar and the file it would stand for.
func (fsys *fileSystem) entries(ctx context.Context, dir string) ([]os.FileInfo, map[string]bool, error) {
	var (
		out   []os.FileInfo
		sides map[string]largo.Info
	)
	var linked map[string]bool
	for in, err := range fsys.view.List(ctx, dir) {
		if err != nil {
			return nil, nil, osErr("readdir", dir, err)
		}
		if fsys.copying && in.Link && in.IsDir {
			// A folder's copy holds its own entries: a linked folder
			// could lead anywhere, back up among them too.
			if linked == nil {
				linked = map[string]bool{}
			}
			linked[in.Name] = true
			continue
		}
		out = append(out, nameInfo(in.Name))
		if _, _, ok := largo.SidecarBase(in.Name); ok && fsys.shows != nil && !in.IsDir {
			if sides == nil {
				sides = map[string]largo.Info{}
			}
			sides[in.Name] = in
		}
	}
	origs := map[string]bool{}
	for name := range sides {
		base, _, _ := largo.SidecarBase(name)
		origs[base] = false
	}
	found := false
	for _, fi := range out {
		if _, ok := origs[fi.Name()]; ok {
			origs[fi.Name()], found = true, true
		}
	}
	if !found {
		return out, linked, nil // no sidecar beside what it would stand for
	}
	fed := slices.Collect(maps.Values(sides))
	for in, err := range fsys.view.List(ctx, dir) {
		if err != nil {
			return nil, nil, osErr("readdir", dir, err)
		}
		if _, side := sides[in.Name]; origs[in.Name] && !side && !in.IsDir {
			fed = append(fed, in)
		}
	}
	slices.SortFunc(fed, func(a, b largo.Info) int { return strings.Compare(a.Name, b.Name) })
	show := fsys.shows(dir)
	hidden := map[string]bool{}
	for name := range linked {
		hidden[name] = true
	}
	for _, in := range fed {
		if !show(in) {
			hidden[in.Name] = true
		}
	}
	out = slices.DeleteFunc(out, func(fi os.FileInfo) bool { return hidden[fi.Name()] })
	return out, hidden, nil
}
