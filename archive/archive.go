// Package archive streams a folder of a largo.Store as one zip, tar or
// tar.zst archive, straight into a writer: nothing is produced ahead of the
// reader, and memory stays bounded whatever the folder's size. Each
// folder is listed through package listing, sorted within its memory
// budget; a zip's central directory, one record per file, is written to a
// temporary file past a few hundred kilobytes, not kept in memory.
//
// The order is deterministic (depth-first, by name), hidden names are
// never included (stores do not list them), and folders reached through a
// symbolic link are not descended into, so a link cannot make a cycle.
//
// Where the length is knowable before the first byte (tar, and zip, whose
// entries are stored and whose CRC-32 goes in a data descriptor after the
// data), Size computes it exactly by arithmetic over the walk: header
// lengths and file sizes, no file is opened, so the length of a terabyte
// folder costs its listing. A file that changed or vanished between that
// walk and the copy ends Write with an error, so a client sees a short
// archive rather than a silently wrong one. Both stop when their context
// is done.
package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	"largo"
	"largo/listing"
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

// Filter makes the test of the entries of the folder dir: given each
// entry in name order (byte by byte), it says whether the entry is kept.
// A new test is made for every folder, so it may keep state across one
// folder's entries (a sidecar's original comes before it).
type Filter func(dir string) func(largo.Info) bool

// Walk yields the entries below the folder dir, under a top folder named
// top, depth-first with each folder's entries sorted by name, each folder
// listed within the memory lc allows. keep, if not nil, filters each
// folder's listing.
func Walk(ctx context.Context, s largo.Store, dir, top string, lc listing.Config, keep Filter) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		in, err := s.Stat(ctx, dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		walk(ctx, s, lc, dir, top+"/", in, keep, true, yield)
	}
}

// walk yields the folder dir and everything below it; false means stop.
// The sorted listing of each folder on the way down stays open while its
// subfolders are walked: in memory if it was small, else as runs on disk
// and a few kilobytes of buffers.
func walk(ctx context.Context, s largo.Store, lc listing.Config, dir, prefix string, in largo.Info, keep Filter, top bool, yield func(Entry, error) bool) bool {
	if !yield(Entry{Path: prefix, Name: dir, Info: in}, nil) {
		return false
	}
	sorted, err := lc.List(ctx, s, dir, listing.ByName, nil)
	if !top && (errors.Is(err, largo.ErrPermission) || errors.Is(err, largo.ErrUnauthorized)) {
		return true // a folder that may be seen but not listed: in the archive, empty
	}
	if err != nil {
		yield(Entry{}, err)
		return false
	}
	defer sorted.Close()
	var kept func(largo.Info) bool
	if keep != nil {
		kept = keep(dir)
	}
	for e, err := range sorted.All() {
		if err != nil {
			yield(Entry{}, err)
			return false
		}
		if kept != nil && !kept(e) {
			continue
		}
		name := largo.Join(dir, e.Name)
		switch {
		case e.IsDir && e.Link:
			continue // a linked folder could lead back up: a cycle
		case e.IsDir:
			if !walk(ctx, s, lc, name, prefix+e.Name+"/", e, keep, false, yield) {
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
// and arithmetic over the headers: no file is read.
func Size(ctx context.Context, format Format, entries iter.Seq2[Entry, error]) (int64, error) {
	switch format {
	case TarZst:
		return -1, nil
	case Tar:
		return tarSize(ctx, entries)
	case Zip:
		return zipSize(ctx, entries)
	}
	return 0, fmt.Errorf("unknown archive format %q", format)
}

// Options are what writing an archive needs besides its entries. The zero
// value compresses tar.zst with an encoder of its own and puts temporary
// files in os.TempDir().
type Options struct {
	// Compress returns the compressor of a tar.zst archive writing to w.
	// Its Close ends the stream; on failure the archive only calls
	// abandon, if it is not nil.
	Compress func(w io.Writer) (zw io.WriteCloser, abandon func(), err error)
	// TempDir is the folder of temporary files (a zip's central
	// directory, past a few hundred kilobytes); "" means os.TempDir().
	TempDir string
}

// Write writes the archive of entries to w in format, reading each file
// from s. size, when not negative, is the length Size promised: if the
// tree changed since, so that the archive would be longer or shorter, Write
// fails with an error wrapping ErrChanged (at the latest at its end, before
// a last byte that would make a wrong archive look complete). A file that
// changes between the walk and its copy fails the same way.
func Write(ctx context.Context, w io.Writer, format Format, entries iter.Seq2[Entry, error], s largo.Store, size int64, opt Options) error {
	var lw *limitWriter
	if size >= 0 {
		lw = &limitWriter{w: w, left: size}
		w = lw
	}
	data := func(e Entry, dst io.Writer) error { return copyFile(ctx, s, e, dst) }
	var err error
	switch format {
	case Zip:
		err = writeZip(ctx, w, entries, data, opt.TempDir)
	case Tar:
		err = writeTar(ctx, w, entries, data)
	case TarZst:
		err = writeTarZst(ctx, w, entries, data, opt.Compress)
	default:
		err = fmt.Errorf("unknown archive format %q", format)
	}
	if err == nil && lw != nil && lw.left != 0 {
		err = fmt.Errorf("archive %d bytes shorter than announced: %w", lw.left, ErrChanged)
	}
	return err
}

// limitWriter refuses to write past the announced length. The archive
// writers hold their last bytes until they close, so a shorter archive
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
	var src io.Reader = f
	if of, ok := f.(largo.OSFile); ok {
		src = of.OSFile() // what sendfile recognises
	}
	n, err := io.Copy(dst, io.LimitReader(src, e.Info.Size))
	if err != nil {
		return err
	}
	if n != e.Info.Size {
		return fmt.Errorf("%s shrank to %d bytes: %w", e.Name, n, ErrChanged)
	}
	return nil
}

// contents writes one file's bytes into an archive.
type contents func(e Entry, dst io.Writer) error

// zeroBlock is a source of zeros, for padding.
var zeroBlock = make([]byte, 64<<10)

// modTime is the time an entry records: whole seconds, in UTC, so that
// every format stores the same value and sizes never depend on precision.
func modTime(in largo.Info) time.Time {
	t := in.ModTime.UTC().Truncate(time.Second)
	if t.Before(time.Unix(0, 0)) {
		return time.Unix(0, 0).UTC()
	}
	return t
}

// tempDir is the folder of temporary files.
func tempDir(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}
