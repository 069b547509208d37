// Package archive streams a folder of a largo.Store as one zip, tar or
// tar.zst archive, straight into a writer: nothing is produced ahead of the
// reader, so memory stays bounded whatever the folder's size (a zip's
// central directory, one small record per file, is the only thing that
// grows with the number of files).
//
// The order is deterministic (depth-first, by name), hidden names are
// never included (stores do not list them), and folders reached through a
// symbolic link are not descended into, so a link cannot make a cycle.
//
// Where the length is knowable before the first byte (tar, and zip with
// stored entries) Size computes it exactly, by writing the archive's
// structure once without the file contents. A file that changed or
// vanished between that walk and the copy ends Write with an error, so a
// client sees a short archive rather than a silently wrong one.
package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"time"

	"largo"
)

// Format is an archive format.
type Format string

// The formats.
const (
	Zip    Format = "zip"
	Tar    Format = "tar"
	TarZst Format = "tar.zst"
)

// Formats lists every Format.
var Formats = []Format{Zip, Tar, TarZst}

// ParseFormat returns the Format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown archive format %q (zip, tar or tar.zst)", s)
}

// Ext is the file name extension of the format, with its dot.
func (f Format) Ext() string { return "." + string(f) }

// ContentType is the media type of the format.
func (f Format) ContentType() string {
	switch f {
	case Zip:
		return "application/zip"
	case Tar:
		return "application/x-tar"
	}
	return "application/zstd"
}

// ErrChanged is the error of an archive whose files changed or vanished
// while it was being written.
var ErrChanged = errors.New("a file changed while the archive was written")

// Entry is one file or folder of an archive.
type Entry struct {
	// Path is the entry's name inside the archive, slash-separated; a
	// folder's ends with a slash.
	Path string
	// Name is the store name to read a file from.
	Name string
	// Info is the metadata the walk found.
	Info largo.Info
}

// Filter may drop entries of one folder's listing (sidecar files, say). It
// receives the folder's entries sorted by name and returns those to keep.
type Filter func(entries []largo.Info) []largo.Info

// Walk yields the entries below the folder dir, under a top folder named
// top, depth-first with each folder's entries sorted by name. keep, if not
// nil, filters each folder's listing.
func Walk(ctx context.Context, s largo.Store, dir, top string, keep Filter) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		in, err := s.Stat(ctx, dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		walk(ctx, s, dir, top+"/", in, keep, yield)
	}
}

// walk yields the folder dir and everything below it; false means stop.
func walk(ctx context.Context, s largo.Store, dir, prefix string, in largo.Info, keep Filter, yield func(Entry, error) bool) bool {
	if !yield(Entry{Path: prefix, Name: dir, Info: in}, nil) {
		return false
	}
	var list []largo.Info
	for e, err := range s.List(ctx, dir) {
		if err != nil {
			yield(Entry{}, err)
			return false
		}
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b largo.Info) int { return cmp.Compare(a.Name, b.Name) })
	if keep != nil {
		list = keep(list)
	}
	for _, e := range list {
		name := largo.Join(dir, e.Name)
		switch {
		case e.IsDir && e.Link:
			continue // a linked folder could lead back up: a cycle
		case e.IsDir:
			if !walk(ctx, s, name, prefix+e.Name+"/", e, keep, yield) {
				return false
			}
		default:
			if !yield(Entry{Path: prefix + e.Name, Name: name, Info: e}, nil) {
				return false
			}
		}
	}
	return true
}

// Size returns the exact length of the archive of entries in format, or -1
// when it cannot be known before compressing (tar.zst). It costs one walk
// and the headers, not the contents.
func Size(format Format, entries iter.Seq2[Entry, error]) (int64, error) {
	if format == TarZst {
		return -1, nil
	}
	var cw countWriter
	err := write(context.Background(), &cw, format, entries, nil)
	return cw.n, err
}

// Write writes the archive of entries to w in format, reading each file
// from s. size, when not negative, is the length Size promised: if the
// tree changed since, so that the archive would be longer or shorter, Write
// fails with an error wrapping ErrChanged (at the latest at its end, before
// a last byte that would make a wrong archive look complete). A file that
// changes between the walk and its copy fails the same way.
func Write(ctx context.Context, w io.Writer, format Format, entries iter.Seq2[Entry, error], s largo.Store, size int64) error {
	var lw *limitWriter
	if size >= 0 {
		lw = &limitWriter{w: w, left: size}
		w = lw
	}
	err := write(ctx, w, format, entries, func(e Entry, dst io.Writer) error { return copyFile(ctx, s, e, dst) })
	if err == nil && lw != nil && lw.left != 0 {
		err = fmt.Errorf("archive %d bytes shorter than announced: %w", lw.left, ErrChanged)
	}
	return err
}

// limitWriter refuses to write past the announced length. The archive
// writers buffer their last bytes until they close, so a shorter archive
// is caught before its final byte is sent.
type limitWriter struct {
	w    io.Writer
	left int64
}

// ReadFrom passes a bounded source (copyFile's) to the underlying
// writer's ReadFrom, so that a file can still go out through sendfile.
func (l *limitWriter) ReadFrom(r io.Reader) (int64, error) {
	lr, ok := r.(*io.LimitedReader)
	rf, canRF := l.w.(io.ReaderFrom)
	if !ok || !canRF {
		return io.Copy(struct{ io.Writer }{l}, r)
	}
	if lr.N > l.left {
		return 0, fmt.Errorf("archive longer than announced: %w", ErrChanged)
	}
	n, err := rf.ReadFrom(lr)
	l.left -= n
	return n, err
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("archive longer than announced: %w", ErrChanged)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

// copyFile copies one file's bytes, checking that it is the version the
// walk saw and that it has exactly the size the header promised.
func copyFile(ctx context.Context, s largo.Store, e Entry, dst io.Writer) error {
	f, err := s.Open(ctx, e.Name)
	if errors.Is(err, largo.ErrNotFound) {
		return fmt.Errorf("%s vanished: %w", e.Name, ErrChanged)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if got := f.Info(); got.Size != e.Info.Size || got.ETag != e.Info.ETag {
		return fmt.Errorf("%s: %w", e.Name, ErrChanged)
	}
	n, err := io.Copy(dst, io.LimitReader(f, e.Info.Size))
	if err != nil {
		return err
	}
	if n != e.Info.Size {
		return fmt.Errorf("%s shrank to %d bytes: %w", e.Name, n, ErrChanged)
	}
	return nil
}

// contents writes one file's bytes into an archive; nil writes zeros of
// the file's length, which is how Size measures.
type contents func(e Entry, dst io.Writer) error

func write(ctx context.Context, w io.Writer, format Format, entries iter.Seq2[Entry, error], data contents) error {
	if data == nil {
		data = zeros
	}
	switch format {
	case Zip:
		return writeZip(ctx, w, entries, data)
	case Tar:
		return writeTar(ctx, w, entries, data)
	case TarZst:
		return writeTarZst(ctx, w, entries, data)
	}
	return fmt.Errorf("unknown archive format %q", format)
}

var zeroBlock = make([]byte, 64<<10)

// zeros writes as many zero bytes as the entry's size.
func zeros(e Entry, dst io.Writer) error {
	for n := e.Info.Size; n > 0; {
		k := min(n, int64(len(zeroBlock)))
		if _, err := dst.Write(zeroBlock[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// modTime is the time an entry records: whole seconds, in UTC, so that
// every format stores the same value and sizes never depend on precision.
func modTime(in largo.Info) time.Time {
	t := in.ModTime.UTC().Truncate(time.Second)
	if t.Before(time.Unix(0, 0)) {
		return time.Unix(0, 0).UTC()
	}
	return t
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
