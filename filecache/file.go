package filecache

import (
	"errors"
	"io"

	"largo"
)

// File is a file of the cache, open: the bytes of the version kept, read
// and sought like any largo.File. Each Open returns its own, which is not
// safe for concurrent use; Close releases nothing, as nothing is held.
type File struct {
	e    *entry
	memo *Memo
	off  int64
}

var (
	_ largo.File  = (*File)(nil)
	_ io.WriterTo = (*File)(nil)
	_ io.ReaderAt = (*File)(nil)
)

// Info implements largo.File.
func (f *File) Info() largo.Info { return f.e.info }

// Bytes returns the file's bytes, which the caller must not change.
func (f *File) Bytes() []byte { return f.e.body }

// Memo returns what the file's reader derived from this version since it
// was last looked at (see Memo).
func (f *File) Memo() *Memo { return f.memo }

// Read implements io.Reader.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errNegative
	}
	if off >= int64(len(f.e.body)) {
		return 0, io.EOF
	}
	n := copy(p, f.e.body[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteTo implements io.WriterTo: what is left, in one Write.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if f.off >= int64(len(f.e.body)) {
		return 0, nil
	}
	n, err := w.Write(f.e.body[f.off:])
	f.off += int64(n)
	return int64(n), err
}

// Seek implements io.Seeker.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.e.body))
	default:
		return f.off, errWhence
	}
	if offset < 0 {
		return f.off, errNegative
	}
	f.off = offset
	return offset, nil
}

// Close implements io.Closer.
func (f *File) Close() error { return nil }

var (
	errNegative = errors.New("filecache: negative offset")
	errWhence   = errors.New("filecache: invalid whence")
)
