package dav

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/ingest"
)

// errNotFile is the error of a file operation the file does not offer.
var errNotFile = errors.New("not available on this file")

// readFile is a file or folder opened for reading or for its properties.
// The store's file is opened on the first Read or Seek only: the library
// opens every entry of a listing to read its properties.
type readFile struct {
	fsys *fileSystem
	ctx  context.Context
	name string
	info *fileInfo
	f    largo.File
}

var (
	_ webdav.File            = (*readFile)(nil)
	_ webdav.DeadPropsHolder = (*readFile)(nil)
)

func (f *readFile) open() error {
	if f.f != nil {
		return nil
	}
	if f.info.dir {
		return &fs.PathError{Op: "read", Path: f.name, Err: errNotFile}
	}
	lf, err := f.fsys.view.Open(f.ctx, f.name)
	if err != nil {
		return osErr("open", f.name, err)
	}
	f.f = lf
	return nil
}

func (f *readFile) Read(p []byte) (int, error) {
	if err := f.open(); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *readFile) Seek(off int64, whence int) (int64, error) {
	if err := f.open(); err != nil {
		return 0, err
	}
	return f.f.Seek(off, whence)
}

func (f *readFile) Close() error {
	if f.f == nil {
		return nil
	}
	return f.f.Close()
}

func (f *readFile) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrPermission}
}

func (f *readFile) Stat() (os.FileInfo, error) { return f.info, nil }

// Readdir lists the folder whole, as the library asks (it takes no
// partial listing), as names alone: the library reads nothing else of
// them, and looks each entry up again (see fileSystem). A PROPFIND's
// listing leaves out what the folder's listings hide (fileSystem.shows).
func (f *readFile) Readdir(int) ([]os.FileInfo, error) {
	if !f.info.dir {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: errNotFile}
	}
	fsys := f.fsys
	fsys.close()
	fsys.listed, fsys.dir, fsys.cur, fsys.locksAt = false, f.name, nil, nil
	out, hidden, err := fsys.entries(f.ctx, f.name)
	if err != nil {
		return nil, err
	}
	with, err := propNames(f.ctx, fsys.h.cfg.Locks.st, f.name)
	if err != nil {
		return nil, err
	}
	fsys.listed, fsys.withProps, fsys.hidden = true, with, hidden
	return out, nil
}

// DeadProps returns the file's dead properties and, for a PROPFIND, the
// live property of its locks (DAV:lockdiscovery), which the library
// cannot find itself: it answers a property named in what this returns
// before it looks for a live one.
func (f *readFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	fsys := f.fsys
	var m map[xml.Name]webdav.Property
	if !fsys.listed || f.name == "" || largo.Parent(f.name) != fsys.dir || fsys.withProps[path.Base(f.name)] {
		var err error
		if m, err = loadProps(f.ctx, fsys.h.cfg.Locks.st, f.name); err != nil {
			return nil, err
		}
	}
	if !fsys.propfind {
		return m, nil
	}
	d, err := fsys.lockDiscovery(f.ctx, f.name)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = make(map[xml.Name]webdav.Property, 1)
	}
	m[d.XMLName] = d
	return m, nil
}

func (f *readFile) Patch(patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	if fsys := f.fsys; fsys.listed && largo.Parent(f.name) == fsys.dir {
		fsys.withProps[path.Base(f.name)] = true
	}
	return patchProps(f.ctx, f.fsys.h.cfg.Locks.st, f.fsys.keeper(f.ctx, f.name), f.name, patches)
}

// writeFile is a write through the pipeline, committed on Close unless a
// write failed: a COPY that breaks halfway leaves the target as it was.
type writeFile struct {
	fsys *fileSystem
	ctx  context.Context
	name string
	w    *ingest.Write
	err  error
	info fileInfo
}

var (
	_ webdav.File            = (*writeFile)(nil)
	_ webdav.DeadPropsHolder = (*writeFile)(nil)
	_ io.ReaderFrom          = (*writeFile)(nil)
)

func (f *writeFile) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	f.err = err
	if err != nil {
		f.fsys.failed = err
	}
	return n, err
}

// ReadFrom receives a copy's source. A file of the store is copied by the
// store itself where it can (largo.Copier: in the kernel on a folder, on
// the server on a bucket); anything else streams through the pipeline's
// own buffers.
func (f *writeFile) ReadFrom(r io.Reader) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	if src, ok := r.(*readFile); ok && !src.info.dir && src.f == nil {
		w, err := f.fsys.h.cfg.Writes.BeginCopy(f.ctx, ingest.Target{Name: f.name, Size: src.info.size, Tokens: f.fsys.allTokens(), Protocol: "webdav"}, src.name)
		if err == nil {
			f.w.Abort()
			f.w = w
			return src.info.size, nil
		}
		if !errors.Is(err, largo.ErrUnsupported) {
			f.err = err
			f.fsys.failed = err
			return 0, err
		}
	}
	n, err := f.w.ReadFrom(r)
	f.err = err
	if err != nil {
		f.fsys.failed = err
	}
	return n, err
}

func (f *writeFile) Close() error {
	if f.err != nil {
		f.w.Abort()
		return f.err
	}
	res, err := f.w.Commit(context.WithoutCancel(f.ctx))
	if err != nil {
		f.err = err
		return f.fsys.fail("commit", f.name, err)
	}
	f.info = newInfo(res.Info)
	f.err = errors.New("file closed")
	return nil
}

func (f *writeFile) Stat() (os.FileInfo, error) {
	if f.info.name == "" {
		return &fileInfo{name: path.Base(f.name), size: f.w.Written()}, nil
	}
	return &f.info, nil
}

func (f *writeFile) Read([]byte) (int, error) { return 0, errNotFile }
func (f *writeFile) Seek(int64, int) (int64, error) {
	return 0, errNotFile
}
func (f *writeFile) Readdir(int) ([]os.FileInfo, error) { return nil, errNotFile }

func (f *writeFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	return loadProps(f.ctx, f.fsys.h.cfg.Locks.st, f.name)
}

func (f *writeFile) Patch(patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	return patchProps(f.ctx, f.fsys.h.cfg.Locks.st, f.fsys.keeper(f.ctx, f.name), f.name, patches)
}

// discardFile takes the bytes of a Finder companion and keeps none.
type discardFile struct{ info fileInfo }

func (f *discardFile) Write(p []byte) (int, error)        { return len(p), nil }
func (f *discardFile) Read([]byte) (int, error)           { return 0, io.EOF }
func (f *discardFile) Seek(int64, int) (int64, error)     { return 0, nil }
func (f *discardFile) Close() error                       { return nil }
func (f *discardFile) Readdir(int) ([]os.FileInfo, error) { return nil, errNotFile }
func (f *discardFile) Stat() (os.FileInfo, error)         { return &f.info, nil }

// nameInfo is an entry of Readdir: its name, all the library reads of it.
type nameInfo string

func (n nameInfo) Name() string       { return string(n) }
func (n nameInfo) Size() int64        { return 0 }
func (n nameInfo) Mode() os.FileMode  { return 0 }
func (n nameInfo) ModTime() time.Time { return time.Time{} }
func (n nameInfo) IsDir() bool        { return false }
func (n nameInfo) Sys() any           { return nil }
